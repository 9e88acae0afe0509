"""Inside a launched rank, torch.distributed's groups are real ProcessGroups on every backend:
inproc registers its backend with torch's c10d and gives each rank its own c10d world, so
the same program gives the same answers on inproc and gloo, guarded."""

import pytest
import torch.distributed as tdist

import trtsim
from tests import c10d_programs as P

BACKENDS = ["inproc", "gloo"]


def launch(prog, backend, tp=2, pp=2, **kw):
    return trtsim.launch(prog, tp=tp, pp=pp, backend=backend, intercept=("torch",), timeout=60,
                         **kw)


@pytest.mark.parametrize("backend", BACKENDS)
def test_groups_and_the_store_behave_as_torch_says(backend):
    results = launch(P.groups_are_real, backend)
    for r, got in enumerate(results):
        assert got["real"] == [True, True, True]
        assert got["sizes"] == (4, 2, 2) and got["ranks"] == (r, r % 2)
        assert got["tp_ranks"] == [r // 2 * 2, r // 2 * 2 + 1] == got["sub_ranks"]
        assert got["subgroups"] == 2 and got["group_rank"] == r % 2
        assert got["store"] == "from 3"
        assert got["backend"] == "gloo"
        assert (got["rank"], got["world_size"]) == (r, 4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_functional_and_coalesced_collectives_compute_what_torch_computes(backend):
    a, b = launch(P.functional, backend, pp=1)
    assert a["all_reduce"] == b["all_reduce"] == [3.0, 6.0]
    assert a["all_gather"] == b["all_gather"] == [1.0, 2.0, 2.0, 4.0]
    assert (a["reduce_scatter"], b["reduce_scatter"]) == ([1.0, 3.0], [5.0, 7.0])
    assert (a["all_to_all"], b["all_to_all"]) == ([0.0, 10.0], [1.0, 11.0])
    assert a["broadcast"] == b["broadcast"] == [1.0, 2.0]
    assert a["coalesced"] == b["coalesced"] == [[2.0, 4.0], [20.0, 40.0]]
    assert a["all_reduce_coalesced"] == b["all_reduce_coalesced"] == [[3.0, 3.0], [7.0]]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_device_mesh_gives_real_groups(backend):
    for r, got in enumerate(launch(P.device_mesh, backend)):
        assert got["real"]
        assert got["tp"] == [r // 2 * 2, r // 2 * 2 + 1] and got["pp"] == [r % 2, r % 2 + 2]
        assert got["tp_sum"] == sum(got["tp"]) and got["pp_sum"] == sum(got["pp"])


def test_a_skipped_functional_collective_is_reported_at_the_step():
    with pytest.raises(trtsim.CollectiveMismatch) as info:
        launch(P.funcol_skip, "inproc", pp=1)
    err = info.value
    assert err.ranks == (0, 1)
    assert {c.api for c in err.calls.values()} == {"funcol.all_reduce"}
    assert all("c10d_programs.py" in c.callsite for c in err.calls.values())


def test_the_process_keeps_its_own_c10d_state():
    import sys
    hook = sys.excepthook
    launch(P.groups_are_real, "inproc")
    assert not tdist.is_initialized()
    assert sys.excepthook is hook
    assert type(tdist.distributed_c10d._world).__name__ == "_World"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_torchdist_shaped_program_runs_on_the_mesh_of_its_mapping(backend):
    results = launch(P.torchdist_shaped, backend)
    for r, got in enumerate(results):
        tp0 = r // 2 * 2
        assert got["tp"] == [tp0, tp0 + 1] and got["pp"] == [r % 2, r % 2 + 2]
        assert got["gathered"] == [{"rank": tp0}, {"rank": tp0 + 1}]
        assert got["at_dst"] == ([f"r{tp0}", f"r{tp0 + 1}"] if r == tp0 else None)
        assert got["box"] == f"from {r % 2}" and got["obj"] == {"to": r}
        assert got["act"] == [float(r if r < 2 else r - 2)] * 2
        assert got["store"] == "yes" and got["local"] == 4
    if backend == "gloo":
        assert any("cuda:nccl,cpu:gloo" in n and "gloo" in n for n in results.notes)


def test_build_mesh_needs_torch_distributed():
    def prog(dist):
        dist.mapping.build_mesh()
    with pytest.raises(trtsim.RankFailed, match="torch.distributed process group has not"):
        trtsim.launch(prog, tp=2, timeout=60)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_group_destroyed_under_a_waiting_peer_is_a_deadlock(backend):
    with pytest.raises(trtsim.CollectiveDeadlock) as info:
        launch(P.destroy_while_waiting, backend, pp=1)
    assert info.value.ranks == (0, 1)           # rank 1 blocked, waiting for finished rank 0
    assert info.value.calls[1].api == "torch.all_reduce"
