"""Which kernel source the executor runs, and the named edits ("breaks") that plant a bug in it.

A break is a text edit of the kernel's source, applied to a *copy* written to a temporary file and
imported from there -- the production kernel has no flags for it.  An edit finds its place by
normalized lines (:func:`find_anchor`: indentation, spacing and comments ignored), so rewording a
comment or re-indenting ``kernel.py`` breaks no break, mutation or exercise; each edit checks that its
text occurs exactly as often as it expects, so a break that no longer fits the kernel fails loudly
instead of silently running the unbroken kernel.  :func:`load_kernel` imports any file with
the same entry points as ``gluon_overlap/kernel.py`` (a learner's edited copy, say).
"""

from __future__ import annotations

import os
import re
import tempfile
import types
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gluon_overlap import kernel
from gluon_overlap.emulate.kernel_files import import_failure, import_source, read_kernel_file  # noqa: F401
from gluon_overlap.emulate.wallclock import WallClockExceeded

DEFAULT_KERNEL = Path(__file__).resolve().parents[1] / "kernel.py"
ENTRY_POINTS = ("mma_scaled_warp_specialized_kernel", "kernel_args", "launch_grid")


@dataclass(frozen=True)
class Edit:
    """Replace ``old`` by ``new`` in the kernel source, where ``old`` must occur ``count`` times.

    ``anchor``: the name of a ``# @anchor: NAME`` tag in the kernel; the match must then start in the
    lines after that tag (up to the next tag), which makes an edit of code that occurs twice unambiguous
    without quoting a comment."""

    old: str
    new: str
    count: int = 1
    anchor: str | None = None


@dataclass(frozen=True)
class Break:
    """A named, deliberate protocol bug: what it does and the edits that make it."""

    name: str
    description: str
    edits: tuple[Edit, ...]
    needs_overlap: bool = False


BREAKS: dict[str, Break] = {
    b.name: b
    for b in (
        Break(
            "skip-overlap-wait",
            "the MMA does not wait on the overlap barrier before tile i+1",
            (
                Edit(
                    "            mbarrier.wait(p.overlap_bar.index(0), (i + 1) % 2)\n",
                    "            pass  # BREAK skip-overlap-wait: no wait on the overlap barrier\n",
                ),
            ),
            True,
        ),
        Break(
            "early-release",
            "the epilogue releases the overlap barrier one subtile too early "
            "(before loading drain step early_release_subtile instead of after it)",
            (
                Edit(
                    "            acc = acc_sub.load().to(p.c_desc.dtype)  # tcgen05.ld + wait::ld: the columns are "
                    "now in registers\n            if USE_OVERLAP and step == EARLY_RELEASE:\n"
                    "                # The last shared column has been read: release the overlap to the next "
                    "tile's MMA.\n"
                    "                mbarrier.arrive(p.overlap_bar.index(0), count=1)\n",
                    "            if USE_OVERLAP and step == EARLY_RELEASE:\n"
                    "                mbarrier.arrive(p.overlap_bar.index(0), count=1)  # BREAK early-release\n"
                    "            acc = acc_sub.load().to(p.c_desc.dtype)\n",
                ),
            ),
            True,
        ),
        Break(
            "even-low-to-high",
            "even tiles drain low-to-high, so the overlapped columns are drained last",
            (
                Edit(
                    "                acc_sub = acc_tmem.slice(drain_column(TMEM_PLAN, 0, step), SUBTILE_COLS)\n"
                    "                store_n = off_n + drain_column(TMEM_PLAN, 0, step)\n",
                    "                acc_sub = acc_tmem.slice(drain_column(TMEM_PLAN, 1, step), SUBTILE_COLS)"
                    "  # BREAK\n"
                    "                store_n = off_n + drain_column(TMEM_PLAN, 1, step)  # BREAK even-low-to-high\n",
                ),
            ),
            True,
        ),
        Break(
            "skip-acc-empty-wait",
            "the MMA does not wait on acc_empty (tile i+2 may reuse a window not yet drained)",
            (
                Edit(
                    "        mbarrier.wait(p.acc_empty_bars.index(acc_state.index), acc_state.phase)\n",
                    "        pass  # BREAK skip-acc-empty-wait: no wait on acc_empty\n",
                ),
            ),
        ),
        Break(
            "wrong-overlap-phase",
            "the MMA waits on the overlap barrier with parity i % 2 instead of (i + 1) % 2",
            (
                Edit(
                    "mbarrier.wait(p.overlap_bar.index(0), (i + 1) % 2)",
                    "mbarrier.wait(p.overlap_bar.index(0), i % 2)  # BREAK wrong-overlap-phase",
                ),
            ),
            True,
        ),
    )
}


def check_breaks(names: object, overlap: bool) -> tuple[str, ...]:
    """Validate break names (known, and possible with this overlap setting); return them sorted."""
    if isinstance(names, (str, bytes)):  # one name, not a sequence of its letters
        raise ValueError(f"breaks={names!r} must be a list of break names, e.g. [{names!r}]")
    if not isinstance(names, Iterable):
        raise ValueError(f"breaks={names!r} must be a list of break names")
    out = []
    for name in names:
        if not isinstance(name, str) or name not in BREAKS:
            raise ValueError(f"break={name!r} is not a known break switch; expected one of {sorted(BREAKS)}")
        if BREAKS[name].needs_overlap and not overlap:
            raise ValueError(
                f"break={name!r} needs overlap on (with overlap off there is no overlap barrier "
                "and even tiles already drain low-to-high)"
            )
        out.append(name)
    return tuple(sorted(set(out)))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _code_part(line: str) -> tuple[str, str]:
    """(code, comment) of one line: the comment from the first ``#`` outside a string literal."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote and line[i - 1] != "\\":
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return line[:i], line[i:]
    return line, ""


def normalized(line: str) -> str:
    """A line as anchors compare it: no indentation, no comment, single spaces."""
    return " ".join(_code_part(line)[0].split())


ANCHOR_TAG = re.compile(r"#.*@anchor:\s*([\w-]+)")


def anchor_region(source: str, name: str) -> tuple[int, int]:
    """``[first, last)`` line indices after the ``# @anchor: name`` tag, up to the next tag."""
    lines = source.splitlines()
    tags = [(i, m.group(1)) for i, line in enumerate(lines) if (m := ANCHOR_TAG.search(line))]
    for j, (i, tag) in enumerate(tags):
        if tag == name:
            return i, tags[j + 1][0] if j + 1 < len(tags) else len(lines)
    raise ValueError(
        f"anchor {name!r} is not tagged in this kernel (a `# @anchor: {name}` comment); "
        f"tagged: {sorted(t for _, t in tags)}"
    )


def find_anchor(source: str, old: str, *, with_comments: bool = False) -> list[tuple[int, int]]:
    """Where ``old`` is in ``source``, compared by normalized lines (:func:`normalized`): indentation,
    repeated spaces, comments and blank or comment-only lines are ignored, so rewording a comment or
    re-indenting the kernel moves no anchor.

    ``old`` spanning lines (it has a newline): the ``[first, last)`` line indices of each run of source
    lines whose code lines equal ``old``'s code lines.  A fragment of one line: the line index of each
    occurrence in a line's code, as ``(index, index + 1)``.
    """
    lines = source.splitlines(keepends=True)
    if "\n" not in old:
        pattern = _fragment_pattern(old)
        return [(i, i + 1) for i, line in enumerate(lines) for _ in pattern.finditer(_code_part(line)[0])]
    key = _with_comment if with_comments else normalized
    wanted = [key(line) for line in old.splitlines() if key(line)]
    if not wanted:
        raise ValueError(
            f"an edit's old text has no code line to anchor on (comments and blank lines are "
            f"ignored): {old!r}; anchor it on a code line or a '# @anchor: NAME' region"
        )
    code = [i for i, line in enumerate(lines) if key(line)]
    normalized_ = key
    spans = []
    for p in range(len(code) - len(wanted) + 1):
        if all(normalized_(lines[code[p + j]]) == wanted[j] for j in range(len(wanted))):
            spans.append((code[p], code[p + len(wanted) - 1] + 1))
    return spans


def _with_comment(line: str) -> str:
    return " ".join(line.split())


def _spans(source: str, edit: Edit) -> list[tuple[int, int]]:
    """:func:`find_anchor` for ``edit``, inside its anchor's region; where code alone occurs more often than
    the edit expects (the same lines twice), the comments ``old`` quotes decide, as they did before anchors."""
    spans = find_anchor(source, edit.old)
    if edit.anchor is not None:
        lo, hi = anchor_region(source, edit.anchor)
        spans = [s for s in spans if lo <= s[0] < hi]
    elif len(spans) > edit.count and "\n" in edit.old:
        spans = find_anchor(source, edit.old, with_comments=True)
    return spans


def _fragment_pattern(old: str) -> re.Pattern:
    words = normalized(old).split(" ")
    return re.compile(r"\s+".join(re.escape(w) for w in words if w))


def _reindent(new: str, delta: int) -> str:
    out = []
    for line in new.splitlines(keepends=True):
        if line.strip():
            line = " " * max(0, _indent(line) + delta) + line.lstrip(" ")
        out.append(line)
    return "".join(out)


def apply_edits(source: str, edits: tuple[Edit, ...] | list[Edit], label: str = "edit") -> str:
    """``source`` with every edit applied, each found by :func:`find_anchor` (so a comment or whitespace
    change in the kernel breaks none); ValueError if an edit's text is not there as often as expected."""
    for edit in edits:
        spans = _spans(source, edit)
        if len(spans) != edit.count:
            first = edit.old.strip().splitlines()[0] if edit.old.strip() else edit.old
            raise ValueError(
                f"{label} does not apply to this kernel: expected {edit.count} occurrence(s) of "
                f"{first!r}, found {len(spans)}"
            )
        lines = source.splitlines(keepends=True)
        if "\n" not in edit.old:
            pattern = _fragment_pattern(edit.old)
            new_code, new_comment = _code_part(edit.new)
            if new_comment == _code_part(edit.old)[1]:
                new_comment = ""  # the edit only carried the comment along: keep the kernel's own
            for i in sorted({s for s, _ in spans}):
                body = lines[i].rstrip("\n")
                code, comment = _code_part(body)
                code = pattern.sub(" ".join(new_code.split()).replace("\\", "\\\\"), code).rstrip()
                comment = new_comment.strip() or comment.strip()  # a comment the edit adds (# BREAK ...) wins
                lines[i] = code + ("  " + comment if comment else "") + lines[i][len(body) :]
        else:
            first_old = next(line for line in edit.old.splitlines() if normalized(line))
            for start, end in reversed(spans):
                delta = _indent(lines[start]) - _indent(first_old)
                new = _reindent(edit.new, delta)
                if new and not new.endswith("\n"):
                    new += "\n"
                lines[start:end] = [new]
        source = "".join(lines)
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
        return kernel
    path = Path(DEFAULT_KERNEL if path is None else path)
    source = read_kernel_file(path)  # says what the path is when it is not a readable text file
    source = break_source(source, tuple(breaks))
    label = path.name + (f" (+{', '.join(breaks)})" if breaks else "")
    stem = "k_" + re.sub(r"\W", "_", path.stem)
    try:
        module = import_source(source, stem, label, salt=str(path))
    except BaseException as exc:  # a kernel that exits (or raises anything) at import is broken, not finished
        if isinstance(exc, (KeyboardInterrupt, WallClockExceeded)):  # a stop from outside: the caller's to report
            raise
        raise ValueError(f"kernel file {str(path)!r} does not import: {import_failure(exc, path)}") from None
    missing = [e for e in ENTRY_POINTS if not hasattr(module, e)]
    if missing:
        raise ValueError(f"kernel file {str(path)!r} lacks {missing} (copy gluon_overlap/kernel.py and edit it)")
    return module


def edited_copy(
    old: str,
    new: str,
    *,
    count: int = 1,
    folder: str | os.PathLike | None = None,
    source: str | os.PathLike | None = None,
) -> Path:
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
