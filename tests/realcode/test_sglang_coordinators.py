"""SGLang's own GroupCoordinators and DP-attention gather under the guard: legal use (TP2 x
PP2, attention DP over each TP group) is never reported and delivers what the peers sent; an
idle DP rank leaving out the gather (SGLang #25404) and a rank calling another collective are
reported at the step, naming the rank, with call sites in SGLang's parallel_state.py."""

import pytest
import torch

import trtsim
from tests.realcode import harness, sglang_programs

LEGAL = [[1, 2], [3, 1], [0, 2]]       # tokens per step per attention-DP rank (step 2: one idle)
IDLE_STEP = 1
SKIP = [[1, 2], [0, 1]]                # step 1: DP rank 0 idle, and it skips the gather
TP = 2
PARALLEL_STATE = "sglang/srt/distributed/parallel_state.py"


def expected(rank: int, step: int, tokens: list[int]) -> dict:
    """What coordinator_loop hands rank ``rank`` at ``step`` on TP2 x PP2."""
    first = TP * (rank // TP)
    gathered = torch.cat([sglang_programs.rows(dp, n) for dp, n in enumerate(tokens)])
    return {"gathered": gathered.tolist(), "sum": [float(2 * first + 1 + TP * 10 * step)] * 3,
            "stacked": [float(first), float(step), float(first + 1), float(step)],
            "object": {"root": first, "step": step},
            "ids": (torch.arange(4) + first).tolist(), "ids_step": step,
            "received": None if rank < TP else ([[float(rank - TP)] * 2] * 2, step)}


def run(backend, *args, pp: int = 1):
    return harness.launch(sglang_programs.coordinator_loop, backend, ("sglang",), tp=2, pp=pp,
                          args=args)


@pytest.mark.parametrize("backend", harness.BACKENDS)
def test_legal_coordinator_calls_and_dp_gathers_are_never_reported_and_deliver(backend):
    results = run(backend, LEGAL, pp=2)
    assert results.divergence == []
    for rank, got in enumerate(results):
        assert got == [expected(rank, step, t) for step, t in enumerate(LEGAL)], f"rank {rank}"


@pytest.mark.parametrize("backend", harness.BACKENDS)
def test_an_idle_rank_skipping_the_dp_gather_is_reported_at_that_step(backend):
    with pytest.raises(trtsim.CollectiveMismatch) as info:
        run(backend, SKIP, True)
    err = info.value
    assert err.group_ranks == (0, 1) and err.ranks == (0, 1), str(err)
    assert {c.iteration for c in err.calls.values()} == {IDLE_STEP}, str(err)
    # rank 1 is in the DP gather; rank 0, which left it out, is already at the step's
    # all-reduce: the same op on the same group, for another purpose
    assert "dp_gather_partial" in err.calls[1].purpose, str(err)
    assert "dp_gather_partial" not in err.calls[0].purpose, str(err)
    assert "purpose" in err.summary, str(err)
    # both sit at the coordinator's all_reduce: the report says how each got there
    assert "via coordinator_loop -> dp_gather -> dp_gather_partial" in str(err), str(err)
    assert all(harness.in_file(c, PARALLEL_STATE) for c in err.calls.values()), str(err)


@pytest.mark.parametrize("backend", harness.BACKENDS)
def test_a_rank_calling_another_collective_is_a_mismatch_naming_both_ops(backend):
    with pytest.raises(trtsim.CollectiveMismatch) as info:
        run(backend, [[1, 1]], False, 1)
    err = info.value
    assert err.group_ranks == (0, 1) and "differs in op" in err.summary, str(err)
    assert {r: c.op for r, c in err.calls.items()} == {0: "allreduce", 1: "broadcast"}, str(err)
    assert "torch.all_reduce" in str(err) and "torch.broadcast" in str(err)
    assert all(harness.in_file(c, PARALLEL_STATE) for c in err.calls.values()), str(err)
