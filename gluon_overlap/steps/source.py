"""The step kernels as text: their sections, and the diff from one step to the next."""

from __future__ import annotations

import difflib
import re

from gluon_overlap.compiler.compile import GluonFunction, kernel_source

_SECTION = re.compile(r"^\s*# ---- (.+?) -*$")


def kernel_sections(fn: GluonFunction) -> dict[str, str]:
    """The source of a step kernel cut at its ``# ---- title ----`` comments: ``{title: code}``
    (the signature, before the first such comment, is ``"signature"``)."""
    sections: dict[str, list[str]] = {"signature": []}
    current = "signature"
    for line in kernel_source(fn).splitlines():
        m = _SECTION.match(line)
        if m:
            current = m.group(1).strip()
            if current in sections:
                raise ValueError(f"section {current!r} appears twice in {fn.__name__}")
            sections[current] = []
        sections[current].append(line)
    return {title: "\n".join(lines) for title, lines in sections.items()}


def step_diff(before: GluonFunction, after: GluonFunction, context: int = 1) -> str:
    """Unified diff of two kernels' sources (docstrings left out), e.g. step 1 -> step 2.

    Lines are matched ignoring their indentation, so a block that only moved into a new loop
    shows as unchanged (printed as it reads in ``after``)."""
    a = kernel_source(before).splitlines()
    b = kernel_source(after).splitlines()
    matcher = difflib.SequenceMatcher(None, [x.strip() for x in a], [x.strip() for x in b], autojunk=False)
    out = [f"--- {before.__name__}", f"+++ {after.__name__}"]
    for group in matcher.get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        out.append(f"@@ -{first[1] + 1},{last[2] - first[1]} +{first[3] + 1},{last[4] - first[3]} @@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [" " + line for line in b[j1:j2]]
                continue
            out += ["-" + line for line in a[i1:i2]]
            out += ["+" + line for line in b[j1:j2]]
    return "\n".join(out)


def diff_stats(before: GluonFunction, after: GluonFunction) -> dict[str, int]:
    """Lines added and removed from ``before`` to ``after``."""
    added = removed = 0
    for line in step_diff(before, after, context=0).splitlines()[2:]:
        if line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return {"added": added, "removed": removed}
