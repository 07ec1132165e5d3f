from gluon_overlap.console import main

main()
