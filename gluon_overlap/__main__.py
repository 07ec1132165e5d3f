from gluon_overlap.cli import entry

entry()
