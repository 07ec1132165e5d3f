"""A mixed fp8 x fp4 pair needs its fp4 operand in the padded shared layout (issue 31): ``kind::f8f6f4`` reads
each e2m1 value from a byte's slot.  A copy of the kernel that builds the fp4 operand's layout packed ran clean on
the interpreter (which keeps logical values) and passes the compiler's check (which stops before that lowering);
it is now refused with the kernel line, while the shipped kernel runs the same problem correctly."""

from __future__ import annotations

import pytest

from gluon_overlap.emulate.kernels import edited_copy
from gluon_overlap.emulate.runs import emulate
from gluon_overlap.formats import random_problem

pytestmark = pytest.mark.e2e

PADDED_B = "fp4_padded=(mixed and b_fp4)"


@pytest.fixture(scope="module")
def problem():
    return random_problem(256, 256, 256, "mxfp8", "mxfp4", seed=3)


def test_the_shipped_kernel_runs_the_mixed_pair(problem):
    result = emulate(problem, clusters=1, trace=False)
    assert result.ok, result.failure


def test_a_packed_fp4_operand_beside_fp8_is_refused_with_the_line(problem, tmp_path):
    packed = edited_copy(PADDED_B, "fp4_padded=False", folder=tmp_path)
    result = emulate(problem, clusters=1, trace=False, kernel=str(packed))
    assert not result.ok
    assert "B is e2m1 beside a e4m3 operand (kind::f8f6f4)" in result.failure, result.failure
    assert "fp4_padded=True" in result.failure and "tcgen05_mma_scaled(" in result.failure
