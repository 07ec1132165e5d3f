"""Run an unmodified Gluon script on the CPU interpreter (``gluon-overlap run``): :func:`run_script`.

* :mod:`gluon_overlap.script.checks` -- ``check_script``: the file exists and compiles (no torch imported).
* :mod:`gluon_overlap.script.runner` -- ``run_script``, ``cuda_on_cpu`` (CUDA answered on the CPU, launches on
  the interpreter), the reports.

The names below are loaded from the runner when first used, so importing ``gluon_overlap.script.checks``
does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gluon_overlap.script.runner import LaunchReport, ScriptReport, cuda_on_cpu, run_script

__all__ = ["LaunchReport", "ScriptReport", "cuda_on_cpu", "run_script"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from gluon_overlap.script import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
