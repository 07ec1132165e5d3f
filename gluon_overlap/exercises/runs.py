"""One problem a kernel checker runs (the problem sets are drawn by :mod:`gluon_overlap.exercises.problems`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    """One problem a kernel checker runs."""

    m: int
    n: int
    k: int
    a_format: str = "nvfp4"
    b_format: str = "nvfp4"
    overlap: bool = False
    num_clusters: int | None = None  # None: one cluster per tile

    @property
    def label(self) -> str:
        clusters = "one cluster per tile" if self.num_clusters is None else f"{self.num_clusters} cluster(s)"
        return (
            f"{self.a_format} x {self.b_format} {self.m}x{self.n}x{self.k}, overlap "
            f"{'on' if self.overlap else 'off'}, {clusters}"
        )
