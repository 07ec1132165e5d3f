"""The CPU interpreter: any ``@gluon.jit`` kernel run on the CPU, every partition of every CTA of every cluster.

It knows nothing of this project's kernel: ``cpu(kernel)[grid](*args, num_warps=4)`` (:mod:`.launch`) runs whatever
kernel it is given, with real bytes through shared memory and TMEM, exact mbarrier semantics, seeded interleavings,
races and deadlocks reported with the kernel line.

* :mod:`.launch`    -- ``cpu(kernel)[grid](...)``, ``launch(kernel, grid, args)``, ``call(fn, ...)``
* :mod:`.rebind`    -- a jit function's Python with its globals served from the registry of builtins
* :mod:`.registry`  -- one row per builtin (:mod:`.apidoc` renders docs/GLUON_API.md from it)
* :mod:`.language`  -- the ``gl.*`` builtins on registers (:mod:`.tensors`: runtime ints, register tensors, pointers)
* :mod:`.async_ops` -- allocations, mbarriers, warp specialization, TMA, ``tcgen05`` (:mod:`.memory`: SMEM, TMEM,
  barriers, descriptors); :mod:`.cp_async` -- cp.async copies, commit / wait groups, their mbarrier arrivals;
  :mod:`.clc` -- cluster launch control (a try_cancel takes over a cluster not started)
* :mod:`.atomics`, :mod:`.global_mem` -- atomics and global memory's races between programs
* :mod:`.ops`       -- the operations a partition hands the engine; :mod:`.engine` -- the scheduler;
  :mod:`.context` -- where a builtin runs
* :mod:`.data`      -- what each operation does to real bytes; :mod:`.races` -- the happens-before race detector

Import the submodules you need; this package imports nothing heavy.
"""
