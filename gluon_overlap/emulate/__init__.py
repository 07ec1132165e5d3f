"""This project's kernel (``gluon_overlap/kernel.py``, or an edited copy of it) run on a problem by the interpreter.

* :mod:`.runs`         -- :func:`~gluon_overlap.emulate.runs.emulate`, sweeps and break matrices against the float
  reference, each phase under its own wall clock (:mod:`.wallclock`)
* :mod:`.config`       -- ``KernelConfig`` (plan, problem, grid, breaks) and the launch of the kernel's own code
* :mod:`.kernels`      -- which kernel file runs and the named edits ("breaks"); :mod:`.kernel_files` -- the private
  folder of copies
* :mod:`.budget`       -- memory and time estimated before a run, refused beyond this machine
* :mod:`.pingpong_record` -- the explorer's recorded ping-pong
"""
