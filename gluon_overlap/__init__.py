"""gluon-overlap: the Blackwell 2-CTA block-scaled Gluon matmul with overlapping TMEM accumulators.

Packages and modules (import what you need; docs/ARCHITECTURE.md draws the house):

* :mod:`gluon_overlap.formats`  -- mxfp8 / mxfp4 / nvfp4 codecs, quantize, random problems, reference
* :mod:`gluon_overlap.swizzle`  -- the packed-block scale layout and its inverse
* :mod:`gluon_overlap.tmem`     -- the TMEM plan (single source of truth for offsets)
* :mod:`gluon_overlap.kernel`   -- the Gluon kernel and its launch wrapper
* :mod:`gluon_overlap.compiler` -- Triton's compiler without a GPU: cross-compiling for sm_100a, the pre-launch check
* :mod:`gluon_overlap.interp`   -- the CPU interpreter: any ``@gluon.jit`` kernel on the CPU
* :mod:`gluon_overlap.emulate`  -- this kernel (or an edited copy) on a problem, checked against the reference
* :mod:`gluon_overlap.timing`   -- the timing model: the recorded operations replayed with costs
* :mod:`gluon_overlap.explorer` -- the ipywidgets TMEM layout explorer
* :mod:`gluon_overlap.plots`    -- drawings shared by notebooks and explorer
"""

import os as _os

# Triton 3.9 prints a UserWarning with an absolute site-packages path unless this is set;
# that text would leak machine paths into notebook outputs.
_os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

__version__ = "0.1.0"
