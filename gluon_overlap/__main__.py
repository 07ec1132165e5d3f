import sys

from gluon_overlap.cli import main

sys.exit(main())
