"""Solutions of the writing exercises (notebooks 03-05), one file each, read as text by
:mod:`gluon_overlap.exercises.writing` -- exactly what a learner's answer file would hold."""
