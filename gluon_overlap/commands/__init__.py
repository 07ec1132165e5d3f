"""Sub-commands of the ``gluon-overlap`` CLI; each module has ``add_parser(subparsers)``.

Command modules import heavy packages (torch, triton) inside their ``run`` function so
that ``gluon-overlap --help`` stays fast.
"""

COMMANDS = ("plan", "compile", "emulate", "model", "bench", "run")
