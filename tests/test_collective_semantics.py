"""The inproc backend computes what torch.distributed computes, group by group."""

import pytest
import torch

import trtsim
from tests import programs


def test_gathers_are_in_group_rank_order_and_roots_are_group_indices():
    res = trtsim.launch(programs.gathers, tp=2, pp=2, args=(1,))
    for r, out in enumerate(res):
        m = trtsim.Mapping(world_size=4, rank=r, tp_size=2, pp_size=2)
        tp_state, pp_ids, tp_b, pp_b, tp_g, ar, tp_max, world, wb = out
        assert tp_state == [{"rank": g, "it": 0} for g in m.tp_group]
        assert pp_ids == [[g] for g in m.pp_group]
        assert tp_b == f"from-tp-root-{m.tp_group[-1]}"      # root = index in the group
        assert pp_b == m.pp_group[0] * 10
        assert tp_g == (m.tp_group if m.tp_rank == 0 else None)
        assert ar == sum(range(4))
        assert tp_max == max(m.tp_group)
        assert world == [0, 1, 2, 3]
        assert wb == (0, "world-root")


def test_tensor_reductions_and_p2p():
    res = trtsim.launch(programs.tensors, tp=2, pp=3)
    for r, out in enumerate(res):
        m = trtsim.Mapping(world_size=6, rank=r, tp_size=2, pp_size=3)
        xs = [torch.arange(4, dtype=torch.float32) + g for g in m.tp_group]
        assert torch.equal(out[0], sum(xs))
        assert torch.equal(out[1], torch.maximum(*xs))
        assert torch.equal(out[2], torch.minimum(*xs))
        assert torch.equal(out[3], xs[0] * xs[1])
        assert [t.tolist() for t in out[4]] == [[g, g] for g in range(6)]
        assert out[5] == 6.0 * m.prev_pp_rank()
        if m.pp_rank > 0:
            assert torch.equal(out[6], torch.full((3, 2), float(m.pp_group[0]) + m.pp_rank - 1))


def test_receivers_get_their_own_copies():
    def prog(dist):
        got = dist.tp_allgather({"shared": [dist.rank]})
        got[0]["shared"].append("mutated")
        dist.barrier()
        return dist.tp_allgather(len(got[0]["shared"]))

    assert trtsim.launch(prog, tp=4) == [[2, 2, 2, 2]] * 4


def test_p2p_is_fifo_per_source_destination_and_tag():
    def prog(dist):
        if dist.rank == 0:
            handles = [dist.isend_object(("a", i), 1, tag=1) for i in range(3)]
            handles += [dist.isend_object(("b", i), 1, tag=2) for i in range(3)]
            for h in handles:
                h.wait()
            return None
        return ([dist.recv_object(0, tag=2) for _ in range(3)],
                [dist.recv_object(0, tag=1) for _ in range(3)])

    assert trtsim.launch(prog, tp=2)[1] == ([("b", i) for i in range(3)], [("a", i) for i in range(3)])


def test_single_member_groups_complete_at_once():
    def prog(dist):
        return dist.tp_allgather(dist.rank), dist.cp_allgather(7), dist.tp_cp_allgather(1)

    assert trtsim.launch(prog, pp=3) == [([r], [7], [1]) for r in range(3)]


def test_cp_groups():
    def prog(dist):
        return dist.cp_allgather(dist.rank), dist.cp_broadcast(dist.rank, root=1), dist.tp_cp_allgather(dist.rank)

    res = trtsim.launch(prog, tp=2, cp=2)
    assert res[0] == ([0, 1], 1, [0, 1, 2, 3]) and res[3] == ([2, 3], 3, [0, 1, 2, 3])


@pytest.mark.parametrize("bad,match", [
    (lambda d: d.tp_broadcast(1, root=2), r"root=2 is not an index of the tp group of 2 ranks"),
    (lambda d: d.allreduce(1, op="mean"), r"op='mean'; expected one of sum, prod, max, min"),
    (lambda d: d.send_object(1, dest=9), r"peer rank 9 out of range"),
])
def test_bad_arguments_fail_the_rank_with_a_clear_message(bad, match):
    with pytest.raises(trtsim.RankFailed, match=match):
        trtsim.launch(lambda d: bad(d), tp=2)


@pytest.mark.parametrize("kwargs,match", [
    (dict(backend="mpi"), "backend='mpi'"), (dict(guard="loose"), "guard='loose'"),
    (dict(timeout=0), "timeout=0"), (dict(tp=3, pp=0), "pp_size=0"),
])
def test_bad_launch_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        trtsim.launch(lambda d: None, **kwargs)


def test_nonblocking_receives():
    res = trtsim.launch(programs.nonblocking_p2p, tp=2)
    assert res[0] == [{"from": 1, "i": 0}, {"from": 1, "i": 1}, [1.0] * 4, True]
    assert res[1][2] == [0.0] * 4
