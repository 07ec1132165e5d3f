"""The TMEM layout explorer: an ipywidgets app (notebook 05b, ``notebooks/explorer.ipynb``, ``make explorer``).

* :mod:`.app`      -- :class:`TmemExplorer`: the controls, the plain-words refusals, the static picture
* :mod:`.render`   -- one picture per key (a configuration and a step), the same bytes whoever draws it
* :mod:`.prefetch` -- a forked worker that draws the pictures a next click may show
* :mod:`.view`     -- layered matplotlib views, cached, encoded to PNG
"""

from gluon_overlap.explorer.app import (
    BLOCK_K_CHOICES,
    CSS_DPI,
    EPILOGUE_BLOCK_N_CHOICES,
    ERROR_CLASS,
    FORMAT_NAMES,
    PIXEL_SCALE,
    STATIC_NOTE,
    TmemExplorer,
    explain_plan_error,
    fast_png,
)

__all__ = [
    "BLOCK_K_CHOICES",
    "CSS_DPI",
    "EPILOGUE_BLOCK_N_CHOICES",
    "ERROR_CLASS",
    "FORMAT_NAMES",
    "PIXEL_SCALE",
    "STATIC_NOTE",
    "TmemExplorer",
    "explain_plan_error",
    "fast_png",
]
