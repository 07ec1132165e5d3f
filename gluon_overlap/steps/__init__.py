"""The kernel built step by step (notebooks 03-05).

* :mod:`.single_buffered` (notebook 03): one tile per cluster, one stage, one instruction stream.
* :mod:`.overlap` (notebook 04): persistent, two overlapping accumulator windows; the next
  tile's MMA starts as soon as the shared columns are drained.
* ``gluon_overlap.kernel`` (notebook 05): the warp-specialized kernel these lead to.

:mod:`.host` builds their arguments with the production kernel's ``make_descriptors``.
"""
