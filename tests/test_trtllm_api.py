"""trtsim.Distributed accepts every public call form of TensorRT-LLM's Distributed / MPIDist /
TorchDist, with TensorRT-LLM's results (shapes, roots, reduce ops), on inproc and gloo."""

import numpy as np
import pytest
import torch
import torch.distributed as tdist

import trtsim
from trtsim import ReduceOp


def properties(dist):
    return {name: getattr(dist, name) for name in (
        "rank", "world_size", "tp_size", "pp_size", "cp_size", "tp_rank", "pp_rank", "cp_rank",
        "has_tp", "has_pp", "has_cp_ulysses", "has_cp_helix", "cp_config", "is_first_pp_rank",
        "is_last_pp_rank", "is_second_last_pp_rank", "next_pp_rank", "prev_pp_rank",
        "local_world_size", "supports_single_round_broadcast")}


def test_properties_are_properties():
    got = trtsim.launch(properties, tp=2, pp=2)
    assert got[3] == {"rank": 3, "world_size": 4, "tp_size": 2, "pp_size": 2, "cp_size": 1,
                      "tp_rank": 1, "pp_rank": 1, "cp_rank": 0, "has_tp": True, "has_pp": True,
                      "has_cp_ulysses": False, "has_cp_helix": False, "cp_config": {},
                      "is_first_pp_rank": False, "is_last_pp_rank": True,
                      "is_second_last_pp_rank": False, "next_pp_rank": 1, "prev_pp_rank": 1,
                      "local_world_size": 4, "supports_single_round_broadcast": False}


def call_forms(dist):
    r = dist.rank
    root_value = f"from-{r}"
    out = {
        "broadcast": [dist.broadcast(root_value), dist.broadcast(root_value, 0),
                      dist.broadcast(root_value, root=1), dist.broadcast(root_value, 0, 1 << 20),
                      dist.broadcast(root_value, root=0, prefer_cpu=True)],
        "broadcast_or_none": [dist.broadcast_or_none(None if r else "x"),
                              dist.broadcast_or_none(None)],
        "allgather": dist.allgather(r),
        "tp": [dist.tp_allgather(r), dist.tp_allgather(r, small_payload=True),
               dist.tp_allgather(r, chunk_size=64), dist.tp_broadcast(r, root=1, chunk_size=8),
               dist.tp_gather(r), dist.tp_gather(r, 1), dist.tp_gather(r, root=1),
               dist.tp_gather(r, dst=1)],
        "pp": [dist.pp_allgather(r), dist.pp_allgather(r, 64), dist.pp_broadcast(r, root=1),
               dist.pp_gather(r), dist.pp_gather(r, dst=1)],
        "tp_cp": [dist.tp_cp_allgather(r), dist.tp_cp_broadcast(r, 1), dist.cp_allgather(r),
                  dist.cp_broadcast(r)],
        "reduce": [dist.allreduce(r), dist.allreduce(r, op=ReduceOp.MAX),
                   dist.allreduce(r, ReduceOp.MIN), dist.allreduce(r + 0.5, op=tdist.ReduceOp.MAX),
                   dist.tp_allreduce(r, op=ReduceOp.PRODUCT), dist.allreduce(r | 4, op="bor"),
                   dist.allreduce(torch.tensor([r, 1]), op=ReduceOp.SUM).tolist()],
        "ints": [dist.tp_allgather_int64([r, 2 * r]).tolist(),
                 dist.tp_allgather_int64(r).shape, dist.allgather_ints([r, r]),
                 dist.cp_allgather_int64([r]).tolist(), dist.tp_cp_allgather_int64([r]).tolist(),
                 dist.broadcast_int64(np.array([r, r], dtype=np.int64), root=1).tolist(),
                 dist.tp_cp_broadcast_int64([r]).tolist()],
    }
    dist.barrier()
    dist.tp_barrier()
    # numpy point to point, MPIDist's buffer sends (world ranks), and the object forms
    peer = r ^ 1
    buf = np.zeros(3, dtype=np.float32)
    handle = dist.isend(np.full(3, r, dtype=np.float32), peer, tag=5)
    got = dist.recv(buf, peer, tag=5)
    handle.wait()
    out["p2p"] = [got is buf, buf.tolist()]
    if r % 2 == 0:
        dist.send(np.arange(2), peer, tag=6)
        dist.send_object({"r": r}, peer, tag=7)
    else:
        out["p2p"] += [dist.recv(np.zeros(2, dtype=np.int64), peer, tag=6).tolist(),
                       dist.recv_object_from_isend(peer, 7)]
    return out


@pytest.mark.parametrize("backend", ["inproc", "gloo"])
def test_every_call_form_runs_with_trtllms_results(backend):
    got = trtsim.launch(call_forms, tp=2, pp=2, backend=backend, timeout=60)
    r3, r1 = got[3], got[1]
    assert r3["broadcast"] == ["from-0", "from-0", "from-1", "from-0", "from-0"]
    assert r3["broadcast_or_none"] == ["x", None]
    assert r3["allgather"] == [0, 1, 2, 3]
    assert r3["tp"][:3] == [[2, 3]] * 3 and r3["tp"][3] == 3
    assert r3["tp"][4] is None and r3["tp"][5:] == [[2, 3]] * 3
    assert r1["pp"] == [[1, 3], [1, 3], 3, [1, 3], None]
    assert r3["tp_cp"] == [[2, 3], 3, [3], 3]
    assert r3["reduce"] == [6, 3, 0, 3.5, 6, 7, [6, 4]]
    ints = r3["ints"]
    assert ints[0] == [[2, 4], [3, 6]] and tuple(ints[1]) == (2, 1) and ints[2] == [[2, 2], [3, 3]]
    assert ints[3] == [[3]] and ints[4] == [[2], [3]] and ints[5] == [1, 1] and ints[6] == [2]
    assert r3["p2p"] == [True, [2.0, 2.0, 2.0], [0, 1], {"r": 2}]


def test_a_bare_number_is_no_reduce_op():
    with pytest.raises(trtsim.RankFailed, match="not a number"):
        trtsim.launch(lambda d: d.allreduce(1, op=3), tp=2)


def test_gather_widths_must_agree():
    with pytest.raises(trtsim.RankFailed, match="different widths"):
        trtsim.launch(lambda d: d.allgather_ints([1] * (1 + d.rank)), tp=2)
