"""Which kernel source the executor runs, and the named edits ("breaks") that plant a bug in it.

A break is an exact text edit of the kernel's source, applied to a *copy* written to a temporary
file and imported from there -- the production kernel has no flags for it.  Each edit checks that
its text occurs exactly as often as it expects, so a break that no longer fits the kernel fails
loudly instead of silently running the unbroken kernel.  :func:`load_kernel` imports any file with
the same entry points as ``gluon_overlap/kernel.py`` (a learner's edited copy, say).
"""

from __future__ import annotations

import os
import re
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path

from gluon_overlap.twin.kernel_files import import_failure, import_source, read_kernel_file  # noqa: F401

DEFAULT_KERNEL = Path(__file__).resolve().parents[1] / "kernel.py"
ENTRY_POINTS = ("mma_scaled_warp_specialized_kernel", "kernel_args", "launch_grid")


@dataclass(frozen=True)
class Edit:
    """Replace ``old`` by ``new`` in the kernel source, where ``old`` must occur ``count`` times."""

    old: str
    new: str
    count: int = 1


@dataclass(frozen=True)
class Break:
    """A named, deliberate protocol bug: what it does and the edits that make it."""

    name: str
    description: str
    edits: tuple[Edit, ...]
    needs_overlap: bool = False


BREAKS: dict[str, Break] = {b.name: b for b in (
    Break("skip-overlap-wait", "the MMA does not wait on the overlap barrier before tile i+1",
          (Edit("            mbarrier.wait(p.overlap_bar.index(0), (i + 1) % 2)\n",
                "            pass  # BREAK skip-overlap-wait: no wait on the overlap barrier\n"),), True),
    Break("early-release", "the epilogue releases the overlap barrier one subtile too early "
          "(before loading drain step early_release_subtile instead of after it)",
          (Edit("            acc = acc_sub.load().to(p.c_desc.dtype)  # tcgen05.ld + wait::ld: the columns are now in "
                "registers\n            if USE_OVERLAP and step == EARLY_RELEASE:\n"
                "                # The last shared column has been read: release the overlap to the next tile's MMA.\n"
                "                mbarrier.arrive(p.overlap_bar.index(0), count=1)\n",
                "            if USE_OVERLAP and step == EARLY_RELEASE:\n"
                "                mbarrier.arrive(p.overlap_bar.index(0), count=1)  # BREAK early-release\n"
                "            acc = acc_sub.load().to(p.c_desc.dtype)\n"),), True),
    Break("even-low-to-high", "even tiles drain low-to-high, so the overlapped columns are drained last",
          (Edit("                acc_sub = acc_tmem.slice(drain_column(TMEM_PLAN, 0, step), SUBTILE_COLS)\n"
                "                store_n = off_n + drain_column(TMEM_PLAN, 0, step)\n",
                "                acc_sub = acc_tmem.slice(drain_column(TMEM_PLAN, 1, step), SUBTILE_COLS)  # BREAK\n"
                "                store_n = off_n + drain_column(TMEM_PLAN, 1, step)  # BREAK even-low-to-high\n"),),
          True),
    Break("skip-acc-empty-wait", "the MMA does not wait on acc_empty (tile i+2 may reuse a window not yet drained)",
          (Edit("        mbarrier.wait(p.acc_empty_bars.index(acc_state.index), acc_state.phase)\n",
                "        pass  # BREAK skip-acc-empty-wait: no wait on acc_empty\n"),)),
    Break("wrong-overlap-phase", "the MMA waits on the overlap barrier with parity i % 2 instead of (i + 1) % 2",
          (Edit("mbarrier.wait(p.overlap_bar.index(0), (i + 1) % 2)",
                "mbarrier.wait(p.overlap_bar.index(0), i % 2)  # BREAK wrong-overlap-phase"),), True),
)}
OVERLAP_ONLY_BREAKS = tuple(name for name, b in BREAKS.items() if b.needs_overlap)


def check_breaks(names: list[str] | tuple[str, ...] | frozenset[str], overlap: bool) -> tuple[str, ...]:
    """Validate break names (known, and possible with this overlap setting); return them sorted."""
    out = []
    for name in names:
        if name not in BREAKS:
            raise ValueError(f"break={name!r} is not a known break switch; expected one of {sorted(BREAKS)}")
        if BREAKS[name].needs_overlap and not overlap:
            raise ValueError(f"break={name!r} needs overlap on (with overlap off there is no overlap barrier "
                             "and even tiles already drain low-to-high)")
        out.append(name)
    return tuple(sorted(set(out)))


def apply_edits(source: str, edits: tuple[Edit, ...] | list[Edit], label: str = "edit") -> str:
    """``source`` with every edit applied; ValueError if an edit's text is not there as expected."""
    for edit in edits:
        found = source.count(edit.old)
        if found != edit.count:
            first = edit.old.strip().splitlines()[0] if edit.old.strip() else edit.old
            raise ValueError(f"{label} does not apply to this kernel: expected {edit.count} occurrence(s) of "
                             f"{first!r}, found {found}")
        source = source.replace(edit.old, edit.new)
    return source


def break_source(source: str, names: tuple[str, ...] | list[str]) -> str:
    for name in names:
        source = apply_edits(source, BREAKS[name].edits, f"break {name!r}")
    return source


def changed_lines(before: str, after: str) -> list[tuple[int, str, str]]:
    """``(line number in after, old text, new text)`` of the lines an edit changed (for notebooks)."""
    import difflib

    a, b = before.splitlines(), after.splitlines()
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        olds, news = a[i1:i2], b[j1:j2]
        for n in range(max(len(olds), len(news))):
            out.append((j1 + n + 1, olds[n] if n < len(olds) else "", news[n] if n < len(news) else ""))
    return out


def load_kernel(path: str | os.PathLike | None = None, breaks: tuple[str, ...] | list[str] = ()) -> types.ModuleType:
    """Import the kernel module in ``path`` (default ``gluon_overlap/kernel.py``), with ``breaks``
    applied to a copy; ValueError if the file is missing, does not import or lacks an entry point."""
    if path is None and not breaks:
        from gluon_overlap import kernel

        return kernel
    path = Path(DEFAULT_KERNEL if path is None else path)
    source = read_kernel_file(path)  # says what the path is when it is not a readable text file
    source = break_source(source, tuple(breaks))
    label = path.name + (f" (+{', '.join(breaks)})" if breaks else "")
    stem = "k_" + re.sub(r"\W", "_", path.stem)
    try:
        module = import_source(source, stem, label, salt=str(path))
    except (Exception, SystemExit) as exc:  # a kernel that exits at import is broken, not finished
        raise ValueError(f"kernel file {str(path)!r} does not import: {import_failure(exc, path)}") from None
    missing = [e for e in ENTRY_POINTS if not hasattr(module, e)]
    if missing:
        raise ValueError(f"kernel file {str(path)!r} lacks {missing} (copy gluon_overlap/kernel.py and edit it)")
    module.__kernel_source_path__ = str(path)
    return module


def edited_copy(old: str, new: str, *, count: int = 1, folder: str | os.PathLike | None = None,
                source: str | os.PathLike | None = None) -> Path:
    """Write a copy of ``gluon_overlap/kernel.py`` (or ``source``) with ``old`` replaced by ``new`` and
    return its path, for ``emulate(..., kernel=path)`` or ``gluon-overlap emulate --kernel PATH``.
    ValueError if ``old`` does not occur exactly ``count`` times."""
    original = Path(DEFAULT_KERNEL if source is None else source)
    text = apply_edits(original.read_text(), (Edit(old, new, count),), "the edit")
    folder = Path(tempfile.mkdtemp(prefix="my-kernel-") if folder is None else folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "my_kernel.py"
    path.write_text(text)
    return path
