"""Run an unmodified Gluon script on the CPU interpreter (``gluon-overlap run``): :func:`run_script`.

* :mod:`gluon_overlap.script.runner` -- ``run_script``, ``cuda_on_cpu`` (CUDA answered on the CPU, launches on
  the interpreter), the reports.
"""

from gluon_overlap.script.runner import LaunchReport, ScriptReport, cuda_on_cpu, run_script

__all__ = ["LaunchReport", "ScriptReport", "cuda_on_cpu", "run_script"]
