"""FSDP2 (``fully_shard``) under the guard: its defaults reduce-scatter gradients with
``ReduceOp.AVG`` and run on inproc and gloo with the gradients of one process;
``set_gradient_divide_factor`` makes it a ``PREMUL_SUM``, which inproc computes; a rank that
skips the step, makes an extra one or skips only the backward is a report naming it."""

import pytest

from tests import torchlib_programs as P
from tests.torchlib_checks import BACKENDS, WORLD, launch, reported_alike, same


@pytest.mark.parametrize("backend", BACKENDS)
def test_fsdp2_defaults_average_gradients_as_one_process_does(backend):
    results = launch(P.fsdp2, backend, None, None)
    want = P.reference_fsdp2()
    for r in range(WORLD):
        assert same(results[r], want), (r, results[r], want)


def test_a_gradient_divide_factor_is_a_premultiplied_sum_on_inproc():
    results = launch(P.fsdp2, "inproc", None, 2.0)
    want = P.reference_fsdp2(divide_factor=2.0)
    assert not same(want, P.reference_fsdp2())          # the factor changes the gradients
    for r in range(WORLD):
        assert same(results[r], want), (r, results[r], want)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bug", ["skip", "extra", "backward"])
def test_a_diverging_fsdp2_rank_is_reported_alike_on_both_backends(bug, backend):
    reported_alike(P.fsdp2, backend, P.BUGGY_RANK[bug], bug, None)
