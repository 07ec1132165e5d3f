"""The CPU twin of the kernel's protocol (and, in timing mode, its cost model).

* :mod:`gluon_overlap.twin.engine`   -- discrete-event engine, mbarriers, operation classes
* :mod:`gluon_overlap.twin.protocol` -- the three partitions as generators, the launch
* :mod:`gluon_overlap.twin.datapath` -- the data backend: TMEM / SMEM storage, TMA, MMA, epilogue, hazards
* :mod:`gluon_overlap.twin.emulate`  -- :func:`emulate`, the one-call run against a reference

Import the submodules you need; this package imports nothing heavy.
"""
