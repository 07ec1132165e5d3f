"""Triton's compiler, used without a GPU: the kernel cross-compiled for ``sm_100a`` and asked about before a launch.

* :mod:`gluon_overlap.compiler.compile`   -- cross-compile any ``@gluon.jit`` kernel (the seed's variants, a step
  kernel, a learner's edit) to an ``sm_100a`` cubin; its statistics;
* :mod:`gluon_overlap.compiler.artifacts` -- readers of the PTX, TTGIR and SASS text;
* :mod:`gluon_overlap.compiler.precheck`  -- before the CPU interpreter runs a launch: Triton's frontend and the
  ``sm_100a`` passes to memory allocation, so what the compiler refuses never runs (with its reason and line);
* :mod:`gluon_overlap.compiler.verdicts`  -- the compiler's verdicts, kept on disk between processes.

The compiled kernel checked against the TMEM plan and the interpreter's recording is :mod:`gluon_overlap.evidence`.
"""
