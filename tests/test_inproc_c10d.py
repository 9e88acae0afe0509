"""Inside a launched rank, torch.distributed's groups are real ProcessGroups on every backend:
inproc registers its backend with torch's c10d and gives each rank its own c10d world, so
the same program gives the same answers on inproc and gloo, guarded."""

import pytest
import torch.distributed as tdist

import trtsim
from tests import c10d_native_programs as N
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


def test_the_process_keeps_its_standard_output_when_ranks_redirect_it_in_turn():
    import os
    before = [(os.fstat(fd).st_dev, os.fstat(fd).st_ino) for fd in (1, 2)]
    assert launch(P.silenced_new_group, "inproc", pp=1) == [2, 2]
    # rank 1 saved fd 1 while rank 0 had it on /dev/null, and restored that last
    assert [(os.fstat(fd).st_dev, os.fstat(fd).st_ino) for fd in (1, 2)] == before


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


def test_every_group_method_torch_calls_computes_what_gloo_computes():
    inproc, gloo = (launch(N.native_calls, backend, pp=1) for backend in BACKENDS)
    coalescing = "c10d._coalescing_manager"
    differ = {k for r in (0, 1) for k in inproc[r] if inproc[r][k] != gloo[r][k]}
    assert differ == {coalescing}, {k: (inproc[0][k], gloo[0][k]) for k in differ}
    for backend, results in (("trtsim", inproc), ("gloo", gloo)):
        for got in results:       # each refuses to coalesce in its own name, alike
            assert got.pop(coalescing) == (f"raised RuntimeError: Backend {backend} does not "
                                           "implement startCoalescing")
            assert not [k for k, v in got.items() if str(v).startswith("raised")], got
    a, b = inproc
    assert a["allreduce"] == b["allreduce"] == [[2.0, 5.0]]             # MAX from the options
    assert (a["reduce"], b["reduce"]) == ("not the root", [6.0])   # PRODUCT at root 1
    assert (a["scatter"], b["scatter"]) == ([[11.0]], [[12.0]])
    assert (a["gather"], b["gather"]) == ([[4.0], [5.0]], [])
    assert b["send_recv"] == [[42.0]]
    assert a["ops.all_reduce"] == b["ops.all_reduce"] == [2.0]
    assert a["c10d.all_gather_into_tensor"] == [1.0, 2.0]
    assert a["allgather_coalesced"] == [[0.0], [0.0, 10.0], [1.0], [1.0, 11.0]]


def test_the_group_answers_every_method_torch_calls_on_a_group():
    """Each ``group.<method>(`` torch's distributed_c10d calls is the inproc group's own:
    none falls through to torch's C++ group, which has no backend behind it here."""
    import inspect
    import re
    from trtsim.backends.inproc.c10d_group import InprocProcessGroup
    called = set(re.findall(r"\bgroup\.(\w+)\(", inspect.getsource(tdist.distributed_c10d)))
    assert {"allreduce", "all_gather_single", "recv_anysource"} <= called
    own = {name for klass in InprocProcessGroup.__mro__[:-1] if klass is not tdist.ProcessGroup
           and klass is not object for name in vars(klass)}
    assert called - own - {"_get_backend"} == set()


@pytest.mark.parametrize("backend", BACKENDS)
def test_groups_made_by_their_members_alone_leave_later_groups_agreed(backend):
    """``use_local_synchronization``: ranks 0 and 1 make two groups, ranks 2 and 3 one, and
    every rank then makes a world group; it is one group on every rank, not a deadlock."""
    results = launch(P.local_synchronization, backend, tp=4, pp=1)
    assert [got[:2] for got in results] == [(4.0, 1.0), (4.0, 1.0), (4.0, 5.0), (4.0, 5.0)]
    assert len({got[2] for got in results}) == 1           # torch names it alike everywhere


def test_a_group_is_named_by_what_its_members_agree_on():
    from trtsim.intercept.torch.groups import GroupNames
    pair_maker, other = GroupNames(), GroupNames()
    first = pair_maker.next((0, 1), local=True)
    assert pair_maker.next((0, 1), local=True) != first          # the second of that list
    assert other.next((2, 3), local=True) != first
    # groups made by their members alone leave the numbering of world groups alone
    assert pair_maker.next((0, 1, 2, 3), local=False) == other.next((0, 1, 2, 3), local=False)
    assert GroupNames().next((0, 1), local=True) == first        # any member names it alike
