"""Drawings shared by the notebooks and the explorer (matplotlib, PNG-friendly).

* :mod:`gluon_overlap.plots.formats`  -- number lines, error histograms, scale layouts
* :mod:`gluon_overlap.plots.tmem`     -- the 512-column TMEM ruler, ownership, drain direction
* :mod:`gluon_overlap.plots.timeline` -- event timelines of the CPU twin
"""
