"""The CPU twin: the real kernel executed on a CPU, and, in timing mode, its cost model.

* :mod:`gluon_overlap.interp.engine`        -- discrete-event engine, mbarriers, operation classes
* :mod:`gluon_overlap.interp.launch`      -- runs a ``@gluon.jit`` kernel's own source (launch / call)
* :mod:`gluon_overlap.interp.registry`      -- the registry of builtins (docs/GLUON_API.md is generated from it)
* :mod:`gluon_overlap.interp.context`       -- the running partition's context, emit, kernel lines
* :mod:`gluon_overlap.interp.language`     -- the CPU Gluon builtins and the rebinding of jit functions
* :mod:`gluon_overlap.interp.tensors`       -- runtime integers, register tensors, pointers
* :mod:`gluon_overlap.interp.memory`        -- shared memory, tensor memory, barriers, descriptors
* :mod:`gluon_overlap.interp.data`      -- what each operation does to real bytes; hazards
* :mod:`gluon_overlap.interp.races`         -- happens-before race detection
* :mod:`gluon_overlap.interp.cp_async`      -- cp.async copies, commit / wait groups, their mbarrier arrivals
* :mod:`gluon_overlap.interp.clc`           -- cluster launch control (try_cancel takes over a cluster not started)
* :mod:`gluon_overlap.script.runner`        -- an unmodified Gluon script run on the CPU (``run_script``)
* :mod:`gluon_overlap.emulate.kernels`       -- which kernel file runs; the named edits ("breaks")
* :mod:`gluon_overlap.emulate.kernel_files`  -- the private, content-addressed folder of edited kernels' copies
* :mod:`gluon_overlap.emulate.config` -- KernelConfig, launching kernel.py on a problem
* :mod:`gluon_overlap.emulate.runs`       -- :func:`emulate`, sweeps and break matrices against a reference
* :mod:`gluon_overlap.emulate.wallclock`     -- a wall-clock budget in this process; os._exit of kernel code guarded
* :mod:`gluon_overlap.timing.streams`       -- the kernel's recorded operations, replayed by the timing model
* :mod:`gluon_overlap.timing.costs`, :mod:`gluon_overlap.timing.model`, :mod:`gluon_overlap.timing.kernel_costs`
  -- the timing model

Import the submodules you need; this package imports nothing heavy.
"""
