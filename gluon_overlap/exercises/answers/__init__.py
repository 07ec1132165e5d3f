"""Solutions of the writing exercises (notebooks 03a-05b), one file each, read as text by
:mod:`gluon_overlap.exercises.writing` -- exactly what a learner's answer file would hold."""
