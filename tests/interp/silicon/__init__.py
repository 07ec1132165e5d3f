"""The silicon differential suite: Gluon kernels recorded on a real GPU (``record.py`` writes
``data/silicon/h200.json``) and replayed on the CPU executor (``compare.py``, ``tests/interp/test_silicon.py``)."""
