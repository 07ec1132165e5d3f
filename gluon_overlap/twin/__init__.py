"""The CPU twin: the real kernel executed on a CPU, and, in timing mode, its cost model.

* :mod:`gluon_overlap.twin.engine`        -- discrete-event engine, mbarriers, operation classes
* :mod:`gluon_overlap.twin.executor`      -- runs a ``@gluon.jit`` kernel's own source (launch / call)
* :mod:`gluon_overlap.twin.builtins`      -- the registry of builtins (docs/GLUON_API.md is generated from it)
* :mod:`gluon_overlap.twin.context`       -- the running partition's context, emit, kernel lines
* :mod:`gluon_overlap.twin.gluon_cpu`     -- the CPU Gluon builtins and the rebinding of jit functions
* :mod:`gluon_overlap.twin.tensors`       -- runtime integers, register tensors, pointers
* :mod:`gluon_overlap.twin.memory`        -- shared memory, tensor memory, barriers, descriptors
* :mod:`gluon_overlap.twin.execdata`      -- what each operation does to real bytes; hazards
* :mod:`gluon_overlap.twin.races`         -- happens-before race detection
* :mod:`gluon_overlap.twin.kernels`       -- which kernel file runs; the named edits ("breaks")
* :mod:`gluon_overlap.twin.kernel_files`  -- the private, content-addressed folder of edited kernels' copies
* :mod:`gluon_overlap.twin.kernel_launch` -- KernelConfig, launching kernel.py on a problem
* :mod:`gluon_overlap.twin.emulate`       -- :func:`emulate`, sweeps and break matrices against a reference
* :mod:`gluon_overlap.twin.wallclock`     -- a wall-clock budget in this process; os._exit of kernel code guarded
* :mod:`gluon_overlap.twin.streams`       -- the kernel's recorded operations, replayed by the timing model
* :mod:`gluon_overlap.twin.costs`, :mod:`gluon_overlap.twin.timing`, :mod:`gluon_overlap.twin.kernel_costs`
  -- the timing model

Import the submodules you need; this package imports nothing heavy.
"""
