"""Run suite cases on a GPU (``device="cuda"``) or on the CPU executor (``device="executor"``), each batch of
cases in worker subprocesses, so a case that kills its process (a SIGFPE in the executor, a GPU fault that
poisons the CUDA context) or hangs is reported as that case's crash or timeout and the rest still run.

``run_cases(names, device, jobs)`` returns ``{name: result}``; a result is a JSON-ready dict (outputs as
:func:`tensor_record`\\ s). The worker entry is ``python -m silicon.runner --worker ...`` (``tests/interp`` on
the path); ``record.py`` and ``compare.py`` are the two callers."""

from __future__ import annotations

import argparse
import base64
import hashlib
import inspect
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
#: the PTX instructions worth keeping in a recording (what the compiler made of the operation under test)
PTX_OPS = re.compile(
    r"\b(?:fma|mul|add|sub|div|sqrt|rsqrt|ex2|lg2|sin|cos|max|min|cvt|atom|red|cp\.async|mbarrier"
    r"|cp\.async\.bulk|shl|shr|rem|neg|abs|setp|selp|mul\.hi)\.[\w.:]+"
)


# =====================================================================================================
# tensors <-> JSON
# =====================================================================================================
def tensor_bytes(t: torch.Tensor) -> bytes:
    return t.detach().to("cpu").contiguous().view(torch.uint8).numpy().tobytes()


def tensor_record(t: torch.Tensor) -> dict[str, Any]:
    """dtype, shape and the raw bytes (zlib, base64) of a tensor."""
    return {
        "dtype": str(t.dtype).removeprefix("torch."),
        "shape": list(t.shape),
        "zlib_b64": base64.b64encode(zlib.compress(tensor_bytes(t), 9)).decode("ascii"),
    }


def tensor_from_record(rec: dict[str, Any]) -> torch.Tensor:
    raw = zlib.decompress(base64.b64decode(rec["zlib_b64"]))
    dtype = getattr(torch, rec["dtype"])
    flat = torch.frombuffer(bytearray(raw), dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
    return flat.view(dtype).reshape(rec["shape"])


def inputs_fingerprint(args: tuple) -> str:
    """SHA-256 over a launch's arguments: tensor bytes (descriptors: their base tensor, shape, strides, block,
    padding) and the repr of everything else -- a recording made from other inputs is stale."""
    h = hashlib.sha256()
    for a in args:
        if isinstance(a, torch.Tensor):
            h.update(f"T{a.dtype}{tuple(a.shape)}{a.stride()}".encode())
            h.update(tensor_bytes(a) if a.device.type != "meta" else b"")
        elif hasattr(a, "base") and hasattr(a, "block_shape"):
            h.update(f"D{a.shape}{a.strides}{a.block_shape}{getattr(a, 'padding', '')}".encode())
            h.update(tensor_bytes(a.base) if a.base.device.type != "meta" else b"")
        else:
            h.update(f"V{a!r}".encode())
    return h.hexdigest()


# =====================================================================================================
# one case, in this process
# =====================================================================================================
def _outputs(launch: Any, c: Any = None) -> dict[str, torch.Tensor]:
    """The launch's outputs on the CPU; with ``c``, the case's order-independent view of them (atomics)."""
    outs = {k: v.detach().to("cpu").clone() for k, v in launch.outputs.items()}
    if c is not None and c.canon:
        from silicon.cases import canonical

        outs = canonical(c, outs)
    return outs


def run_on_cuda(c: Any) -> dict[str, Any]:
    """Launch a case with Triton on the current CUDA device; a repeat (fresh inputs) checks determinism, a race
    case is launched ``c.launches`` times and its distinct outcomes kept."""
    launch = c.build("cuda")
    fingerprint = inputs_fingerprint(c.build("cpu").args)
    start = time.perf_counter()
    compiled = c.kernel[c.grid](*launch.args, num_warps=c.num_warps, num_ctas=c.num_ctas, **c.launch_options)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    try:
        ptx = re.sub(r"//[^\n]*", "", compiled.asm["ptx"])
    except (AttributeError, KeyError, TypeError):
        ptx = ""
    result: dict[str, Any] = {
        "inputs_sha256": fingerprint,
        "seconds": round(seconds, 3),
        "ptx_ops": sorted(set(PTX_OPS.findall(ptx))),
    }
    first = _outputs(launch, c)
    result["outputs_canonical"] = bool(c.canon)
    if c.check == "race":
        outcomes: dict[bytes, dict[str, Any]] = {}
        for _ in range(c.launches):
            again = c.build("cuda")
            c.kernel[c.grid](*again.args, num_warps=c.num_warps, num_ctas=c.num_ctas, **c.launch_options)
            torch.cuda.synchronize()
            outs = _outputs(again)
            key = b"".join(tensor_bytes(t) for t in outs.values())
            entry = outcomes.setdefault(key, {"count": 0, "outputs": {k: tensor_record(t) for k, t in outs.items()}})
            entry["count"] += 1
        result.update(
            launches=c.launches, distinct=len(outcomes), outcomes=sorted(outcomes.values(), key=lambda e: -e["count"])
        )
        return result
    again = c.build("cuda")
    c.kernel[c.grid](*again.args, num_warps=c.num_warps, num_ctas=c.num_ctas, **c.launch_options)
    torch.cuda.synchronize()
    second = _outputs(again, c)
    result["repeat_identical"] = all(tensor_bytes(first[k]) == tensor_bytes(second[k]) for k in first)
    result["outputs"] = {k: tensor_record(t) for k, t in first.items()}
    return result


def run_on_executor(c: Any) -> dict[str, Any]:
    """Launch a case on the project's CPU executor (``gluon_overlap.interp.launch.launch``): outputs, hazards,
    the error it reports. TRITON_DEFAULT_FP_FUSION follows the case's fusion setting (the executor may read it
    as Triton does), and the launch option is passed where ``launch`` accepts it."""
    from gluon_overlap.interp.launch import launch as executor_launch

    os.environ["TRITON_DEFAULT_FP_FUSION"] = "1" if c.fp_fusion else "0"
    accepted = inspect.signature(executor_launch).parameters
    extra = {k: v for k, v in c.launch_options.items() if k in accepted}
    launch = c.build("cpu")
    fingerprint = inputs_fingerprint(launch.args)
    start = time.perf_counter()
    res = executor_launch(
        c.kernel, c.grid, launch.args, num_ctas=c.num_ctas, num_warps=c.num_warps, precheck=False, **extra
    )
    seconds = time.perf_counter() - start
    return {
        "inputs_sha256": fingerprint,
        "seconds": round(seconds, 3),
        "outputs": {k: tensor_record(t) for k, t in _outputs(launch).items()},
        "hazards": [{"kind": h.kind, "text": str(h)} for h in res.hazards],
        "deadlock": None if res.deadlock is None else str(res.deadlock),
        "error": res.error,
        "step_limit_hit": bool(res.step_limit_hit),
        "options_not_taken": sorted(set(c.launch_options) - set(extra)),
    }


# =====================================================================================================
# workers
# =====================================================================================================
def _worker(names: list[str], device: str, log: Path) -> int:
    from silicon.cases import case

    if device == "cuda":
        torch.cuda.init()
    with log.open("a") as out:
        for name in names:
            out.write(json.dumps({"start": name}) + "\n")
            out.flush()
            try:
                result = run_on_cuda(case(name)) if device == "cuda" else run_on_executor(case(name))
            except Exception as exc:  # noqa: BLE001  (the case's own failure, reported with it)
                result = {"error": f"{type(exc).__name__}: {exc}"[:4000]}
                try:
                    result["inputs_sha256"] = inputs_fingerprint(case(name).build("cpu").args)
                except Exception:  # noqa: BLE001  (a builder that fails is reported by the error above)
                    pass
                if device == "cuda":
                    try:
                        torch.cuda.synchronize()
                    except Exception:  # noqa: BLE001  the context is gone: report and let a fresh worker go on
                        out.write(json.dumps({"case": name, "result": result}) + "\n")
                        out.flush()
                        return 3
            out.write(json.dumps({"case": name, "result": result}) + "\n")
            out.flush()
    return 0


def _read_log(log: Path) -> tuple[dict[str, dict], str | None, float]:
    """Finished results, the case started but not finished (if any) and when the log last grew."""
    done: dict[str, dict] = {}
    started: str | None = None
    if not log.exists():
        return done, None, 0.0
    for line in log.read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a crash
        if "start" in rec:
            started = rec["start"]
        else:
            done[rec["case"]] = rec["result"]
            started = None
    return done, started, log.stat().st_mtime


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def run_cases(
    names: list[str],
    device: str,
    jobs: int = 1,
    case_timeout: float = 300.0,
    env: dict[str, str] | None = None,
    progress: bool = False,
) -> dict[str, dict]:
    """Run ``names`` on ``device`` in ``jobs`` worker processes; a case whose worker dies is reported as a crash
    (``{"crash": "SIGFPE"}``), one that runs past ``case_timeout`` seconds as a timeout, and the worker's other
    cases go on in a fresh worker."""
    with tempfile.TemporaryDirectory(prefix="silicon-") as tmp:
        return _run_cases(names, device, jobs, case_timeout, env, progress, Path(tmp))


def _run_cases(
    names: list[str],
    device: str,
    jobs: int,
    case_timeout: float,
    env: dict[str, str] | None,
    progress: bool,
    workdir: Path,
) -> dict[str, dict]:
    results: dict[str, dict] = {}
    pending = list(names)
    run_env = dict(os.environ, **(env or {}))
    run_env["PYTHONPATH"] = os.pathsep.join(
        [str(HERE.parent)] + [p for p in run_env.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    round_no = 0
    while pending:
        round_no += 1
        shards = [pending[i::jobs] for i in range(min(jobs, len(pending)))]
        procs = []
        for i, shard in enumerate(shards):
            log = workdir / f"r{round_no}_w{i}.jsonl"
            cmd = [sys.executable, "-m", "silicon.runner", "--worker", "--device", device, "--log", str(log), *shard]
            procs.append(
                (
                    subprocess.Popen(
                        cmd, env=run_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
                    ),
                    log,
                    shard,
                    time.time(),
                )
            )
        still: list[str] = []
        for proc, log, shard, started_at in procs:
            last_growth = started_at
            while True:
                try:
                    proc.wait(timeout=1.0)
                    break
                except subprocess.TimeoutExpired:
                    _, current, mtime = _read_log(log)
                    last_growth = max(last_growth, mtime)
                    if current is not None and time.time() - last_growth > case_timeout:
                        os.killpg(proc.pid, signal.SIGKILL)
                        proc.wait()
                        break
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            done, current, _ = _read_log(log)
            results.update(done)
            if progress:
                print(f"[{device}] worker finished {len(done)}/{len(shard)} (exit {proc.returncode})", flush=True)
            if current is not None:
                if proc.returncode is not None and proc.returncode < 0 and proc.returncode != -signal.SIGKILL:
                    results[current] = {"crash": _signal_name(proc.returncode), "stderr": err[-2000:]}
                elif proc.returncode == -signal.SIGKILL:
                    results[current] = {"timeout": case_timeout}
                else:
                    results[current] = {"crash": f"exit {proc.returncode}", "stderr": err[-2000:]}
            still += [n for n in shard if n not in results]
        if still and still == pending:  # no progress at all: report and stop
            for n in still:
                results[n] = {"crash": "the worker made no progress", "stderr": err[-2000:]}
            break
        pending = still
    return {n: results[n] for n in names if n in results}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", action="store_true", required=True)
    parser.add_argument("--device", choices=("cuda", "executor"), required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("names", nargs="*")
    args = parser.parse_args(argv)
    return _worker(args.names, args.device, args.log)


if __name__ == "__main__":
    sys.exit(main())
