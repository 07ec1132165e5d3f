"""Compile the suite's launches for a GPU target on any machine (no GPU needed): sm_100a (Blackwell, the
project's target) and sm_90a (Hopper, where the recording is made).

``python -m silicon.compiling [--arch 100|90]`` (with ``tests/interp`` on ``sys.path``) compiles every
distinct launch and prints the ones the compiler refuses; ``compile_case`` is what the test calls."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from .cases import CASES, Case


def specialization(c: Case) -> tuple:
    """What the compiled kernel depends on: the kernel, its signature, its constexprs and the options."""
    from gluon_overlap.compiler.compile import source_for

    src = source_for(c.kernel, c.build("meta").args)
    constexprs = tuple(sorted((k, repr(v)) for k, v in src.constants.items()))
    return (
        c.kernel.fn.__qualname__,
        tuple(sorted(src.signature.items())),
        constexprs,
        c.num_warps,
        c.num_ctas,
        c.options,
    )


def compile_case(c: Case, arch: int = 100) -> Any:
    """Triton's compiled kernel (sm_``arch``a) for one case's launch; raises what the compiler raises."""
    import triton
    from triton.backends.compiler import GPUTarget

    from gluon_overlap.compiler.compile import source_for

    src = source_for(c.kernel, c.build("meta").args)
    options = {"num_warps": c.num_warps, "num_ctas": c.num_ctas, **c.launch_options}
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options=options)


def distinct_cases(cases: list[Case] | None = None) -> list[Case]:
    """One case per compiled specialization (cases that differ only in data compile once)."""
    seen: dict[tuple, Case] = {}
    for c in cases if cases is not None else CASES:
        seen.setdefault(specialization(c), c)
    return list(seen.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", type=int, default=100, choices=(90, 100))
    args = parser.parse_args(argv)
    failed = 0
    todo = distinct_cases()
    start = time.perf_counter()
    for c in todo:
        try:
            ck = compile_case(c, args.arch)
            assert f".target sm_{args.arch}a" in ck.asm["ptx"]
        except Exception as exc:  # noqa: BLE001  (reported per case)
            failed += 1
            print(f"FAIL {c.name}: {type(exc).__name__}: {str(exc).strip().splitlines()[-1][:300]}")
    print(
        f"{len(todo) - failed}/{len(todo)} distinct launches ({len(CASES)} cases) compile for sm_{args.arch}a "
        f"in {time.perf_counter() - start:.0f} s"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
