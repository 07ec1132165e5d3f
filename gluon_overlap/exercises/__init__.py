"""Exercises that check themselves, one module per notebook (02-06), and the writing exercises.

Each checker runs the learner's answer -- a function, a dict, or an edited kernel run on the
CPU executor -- prints ``PASS`` or ``FAIL`` with a hint, and returns a :class:`Verdict`
(true when passed); none accepts the library's own code in place of the learner's (:mod:`.guard`).  The
solutions live in :mod:`.solutions`; :func:`exercises` (:mod:`.catalog`) lists every checker with its solution
(the tests run each on both and on wrong answers).  :mod:`.writing` holds the exercises where
the learner writes Gluon in a file (solutions in ``answers/``), compiled for sm_100a and run.
"""

from __future__ import annotations

from gluon_overlap.exercises.catalog import Exercise, exercises, solution, writing_exercises
from gluon_overlap.exercises.check import Verdict, verdict
from gluon_overlap.exercises.hints import hint

__all__ = ["Exercise", "Verdict", "exercises", "hint", "solution", "verdict", "writing_exercises"]
