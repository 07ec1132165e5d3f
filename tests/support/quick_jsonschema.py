"""A pytest plugin loaded before every other (``-p quick_jsonschema`` in pyproject.toml's addopts): it imports
``jsonschema`` without its IRI-syntax format checker, as :func:`gluon_overlap.hardware._import_jsonschema` does.

nbval imports nbformat, which imports jsonschema, which imports ``rfc3987_syntax`` when it is installed (Jupyter's
extras install it): building that module's RFC 3987 parser takes 2.5 s of CPU in every pytest process (the
controller and each worker). Nothing here validates a ``format`` (nbformat's notebook schema names none, and
jsonschema checks formats only when asked), so no test sees a difference; ``rfc3987_syntax`` stays importable.
"""

from __future__ import annotations

from gluon_overlap.hardware import _import_jsonschema

_import_jsonschema()
