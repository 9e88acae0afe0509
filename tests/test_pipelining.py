"""``torch.distributed.pipelining`` under the guard: GPipe, 1F1B and Interleaved1F1B receive
activations into leaf tensors that require grad, which inproc writes as gloo does; each
schedule's gradients equal one process's, and a rank that skips the step, runs an extra one
or runs only the forward passes (``eval``) is a report naming the user's line."""

import pytest

from tests import torchlib_programs as P
from tests.torchlib_checks import BACKENDS, WORLD, launch, reported_alike, same

SCHEDULES = ["gpipe", "1f1b", "interleaved"]


def _check(results, schedule):
    want = P.reference_pipeline(schedule)
    for r in range(WORLD):
        for stage, grads in results[r].items():
            assert same(grads, want[stage], atol=1e-6), (schedule, r, stage)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_schedule_computes_the_gradients_of_one_process(schedule):
    _check(launch(P.pipeline, "inproc", schedule, None), schedule)


@pytest.mark.slow
def test_1f1b_computes_the_same_gradients_on_gloo():
    _check(launch(P.pipeline, "gloo", "1f1b", None), "1f1b")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("bug", ["skip", "extra", "backward"])
def test_a_diverging_stage_is_reported_alike_on_both_backends(schedule, bug, backend):
    reported_alike(P.pipeline, backend, P.BUGGY_RANK[bug], schedule, bug)
