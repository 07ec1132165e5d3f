"""gluon-overlap: the Blackwell 2-CTA block-scaled Gluon matmul with overlapping TMEM accumulators.

Modules (import what you need; heavy modules load torch/triton lazily):

* :mod:`gluon_overlap.formats`  -- mxfp8 / mxfp4 / nvfp4 codecs, quantize, random problems, reference
* :mod:`gluon_overlap.swizzle`  -- the packed-block scale layout and its inverse
* :mod:`gluon_overlap.tmem`     -- the TMEM plan (single source of truth for offsets)
* :mod:`gluon_overlap.kernel`   -- the Gluon kernel and its launch wrapper
* :mod:`gluon_overlap.compiler.compile`  -- cross-compiling the kernel for sm_100a without a GPU
* :mod:`gluon_overlap.twin`     -- the CPU twin of the kernel's protocol (and its timing model)
* :mod:`gluon_overlap.explorer` -- the ipywidgets TMEM layout explorer
* :mod:`gluon_overlap.plots`    -- drawings shared by notebooks and explorer
"""

import os as _os

# Triton 3.9 prints a UserWarning with an absolute site-packages path unless this is set;
# that text would leak machine paths into notebook outputs.
_os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

__version__ = "0.1.0"
