"""vLLM's own GroupCoordinators under the guard: legal use (TP2 x PP2 on 4 ranks) is never
reported and every call delivers what its peers sent; one rank calling another collective
(TP2) is a mismatch that names both ops, at the step, with call sites in vLLM's files."""

import pytest
import torch

import trtsim
from tests.realcode import harness, vllm_programs

STEPS = 3
TP = 2


def expected(rank: int, step: int) -> dict:
    """What coordinator_loop hands rank ``rank`` at ``step`` on TP2 x PP2: its TP group is
    the pair ``2 * (rank // 2) + (0, 1)``, its PP predecessor (last stage) ``rank - 2``."""
    first = TP * (rank // TP)
    peers = [first, first + 1]
    return {"sum": [float(sum(peers) + TP * 10 * step)] * 3,
            "gathered": [[p, step] for p in peers],
            "object": {"root": first, "step": step},
            "ids": (torch.arange(4) + first).tolist(), "ids_step": step,
            "received": None if rank < TP else ([[float(rank - TP)] * 2] * 2, step)}


@pytest.mark.parametrize("backend", harness.BACKENDS)
def test_legal_group_coordinator_calls_are_never_reported_and_deliver(backend):
    results = harness.launch(vllm_programs.coordinator_loop, backend, ("vllm",), tp=2, pp=2,
                             args=(STEPS,))
    assert results.divergence == []
    for rank, got in enumerate(results):
        assert got == [expected(rank, step) for step in range(STEPS)], f"rank {rank}"


@pytest.mark.parametrize("backend", harness.BACKENDS)
def test_one_rank_calling_another_collective_is_a_mismatch_naming_both_ops(backend):
    with pytest.raises(trtsim.CollectiveMismatch) as info:
        harness.launch(vllm_programs.coordinator_loop, backend, ("vllm",), tp=2,
                       args=(STEPS, 1))
    err = info.value
    assert err.group_ranks == (0, 1) and err.ranks == (0, 1), str(err)
    assert "differs in op" in err.summary, str(err)
    assert {r: c.op for r, c in err.calls.items()} == {0: "allreduce", 1: "allgather"}, str(err)
    assert "torch.all_reduce" in str(err) and "torch.all_gather_into_tensor" in str(err)
    assert {c.iteration for c in err.calls.values()} == {0}, str(err)
    assert all(harness.in_file(c, "vllm/distributed/device_communicators/cpu_communicator.py")
               for c in err.calls.values()), str(err)
