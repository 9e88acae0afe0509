"""vLLM's DP coordination (``vllm/v1/worker/dp_utils.py``) under the guard, DP2: every DP
rank coordinating each step, or all of them leaving it out together under
``skip_dp_coordination()``, is legal and each learns every rank's token count; one idle rank
leaving it out alone (vLLM #43547) is reported at that step, naming it, with the call site
in dp_utils.py."""

import pytest

import trtsim
from tests.realcode import harness, vllm_programs

LEGAL = [[3, 5], [0, 0], [4, 1], [2, 2]]      # step 1: both ranks idle, both skip
ZERO_STEP = 1
SKIP = [[3, 5], [0, 2], [4, 4]]                # step 1: DP rank 0 idle, rank 1 busy


def run_dp(schedule, backend, seed: int = 0):
    return harness.launch(vllm_programs.dp_steps, backend, ("vllm",), tp=2, attention_dp=True,
                          args=(schedule, True), iteration_marker=vllm_programs.DP_STEP,
                          seed=seed)


@pytest.mark.parametrize("backend", harness.BACKENDS)
def test_coordinating_together_or_skipping_together_is_legal(backend):
    results = run_dp(LEGAL, backend)
    assert list(results) == [LEGAL, LEGAL] and results.divergence == []


@pytest.mark.parametrize("backend", harness.BACKENDS)
def test_an_idle_rank_skipping_dp_coordination_alone_is_reported_at_that_step(backend):
    with pytest.raises(trtsim.CollectiveMismatch) as info:
        run_dp(SKIP, backend)
    err = info.value
    assert err.group_ranks == (0, 1) and err.ranks == (0, 1), str(err)
    assert "rank 0 skipped a call" in err.explanation, str(err)
    # iteration i+1 is the i-th execute_model: rank 1 is still at the zero-token step
    assert err.calls[1].iteration == ZERO_STEP + 1, str(err)
    assert err.calls[0].iteration == ZERO_STEP + 2, str(err)
    assert all(harness.in_file(c, "vllm/v1/worker/dp_utils.py") and "_run_ar" in c.callsite
               for c in err.calls.values()), str(err)
