"""Differentiable functional collectives under the guard: forward values and gradients equal
to one process's on inproc and gloo, the backward pass's adjoint collectives are guarded calls
of their own, and a rank that skips the calls, makes an extra one or skips only the backward
is a report naming it and the user's line, on both backends."""

import pytest

from tests import torchlib_programs as P
from tests.torchlib_checks import BACKENDS, WORLD, launch, reported_alike, same


@pytest.mark.parametrize("backend", BACKENDS)
def test_forward_and_gradients_equal_one_process(backend):
    results = launch(P.funcol_autograd, backend, None)
    want = P.reference_funcol_autograd()
    for r in range(WORLD):
        assert results[r]["grad"] is not None, r
        assert same(results[r], want[r]), (r, results[r], want[r])


def test_the_backward_collectives_are_guarded_calls_of_their_own():
    # the backward pass of a gather, a reduce-scatter and an all-to-all is three more calls
    census = launch(P.with_census, "inproc", "funcol_autograd", None)[0]["census"]
    calls = {label: n for (_, kind, label), n in census.items() if label.startswith("funcol.")}
    assert calls == {"funcol.all_gather_into_tensor": 2, "funcol.reduce_scatter_tensor": 2,
                     "funcol.all_to_all_single": 2}, calls


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bug", ["skip", "extra", "backward"])
def test_a_diverging_rank_is_reported_alike_on_both_backends(bug, backend):
    reported_alike(P.funcol_autograd, backend, P.BUGGY_RANK[bug], bug)
