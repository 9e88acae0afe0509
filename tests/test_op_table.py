"""The op table (trtsim.calls.ops) and the call rules in guard/ that every backend applies:
the p2p payload rule, the list-length rule of intercepted calls, the collective entry rule,
and when a sent message counts as taken."""

import json
import pickle
import re

import pytest
import torch

import trtsim
from trtsim.calls import semantics
from trtsim.guard import rules
from trtsim.calls.ops import COLLECTIVES, RECEIVES, SENDS, Op, Payload, p2p_op
from trtsim.backends.process.record_codec import match_hash
from trtsim.calls.records import CallRecord

pytestmark = pytest.mark.timeout(240)
BACKENDS = ["inproc", "gloo"]


def record(op, seq=1, kind="tp", ranks=(0, 1), rank=0, **kw) -> CallRecord:
    return CallRecord(op, seq, "x", 0, "f.py:1 in f", "object", rank, rank, "", kind, ranks,
                      **kw)


# -- the table -----------------------------------------------------------------------------
def test_an_op_is_its_string_in_every_serialised_form():
    rec, old = record(Op.GATHER, root=0), record("gather", root=0)
    assert Op.GATHER == "gather" and hash(Op.GATHER) == hash("gather")
    assert {"gather": 1}[Op.GATHER] == 1 and f"{Op.GATHER}" == "gather"
    assert repr(rec) == repr(old) and match_hash(rec) == match_hash(old)
    assert json.dumps(rec.to_dict()) == json.dumps(old.to_dict())
    back = pickle.loads(pickle.dumps(rec))
    assert back == old and type(back.op) is str        # a log written now reads as before


def test_the_table_says_what_each_op_is():
    assert {o.value for o in Op if o.rooted} == {"broadcast", "gather", "scatter", "reduce"}
    assert {o.value for o in Op if o.reduces} == {"allreduce", "reduce", "reduce_scatter"}
    assert set(COLLECTIVES) | set(SENDS) | set(RECEIVES) == set(Op)
    assert all(o.p2p and o.payload is Payload.MESSAGE for o in SENDS + RECEIVES)
    assert Op.BARRIER.payload is Payload.NONE and Op.SCATTER.payload is Payload.ROOT_LIST
    assert p2p_op(sends=True, tensor=True, blocking=False) is Op.ISEND_TENSOR
    assert not Op.IRECV_OBJECT.blocking and Op.RECV_TENSOR.tensor
    with pytest.raises(ValueError, match="unknown communication op 'gathr'; known: allgather"):
        Op.of("gathr")


def test_the_semantics_dispatch_on_the_table():
    assert semantics.execute("gather", [1, 2, 3], 2, None) == [None, None, [1, 2, 3]]
    assert semantics.execute(Op.REDUCE, [1, 5], 0, "max") == [5, None]
    with pytest.raises(ValueError, match="point-to-point"):
        semantics.execute("send_tensor", [1, 2], None, None)


# -- rules ---------------------------------------------------------------------------------
def test_every_collective_of_two_or_more_waits_for_all_members_and_p2p_does_not():
    assert all(rules.awaits_every_member(record(o)) for o in COLLECTIVES)
    assert not rules.awaits_every_member(record(Op.BROADCAST, ranks=(3,), root=0))
    assert not any(rules.awaits_every_member(record(o, kind="p2p")) for o in SENDS)


def test_a_message_is_taken_once_its_receiver_posted_a_later_receive_on_the_channel():
    sent = record(Op.ISEND_OBJECT, seq=1, kind="p2p", rank=0, peer=1, tag=5)
    later = record(Op.RECV_OBJECT, seq=2, kind="p2p", rank=1, peer=0, tag=5)
    assert rules.message_taken(sent, later)
    assert not rules.message_taken(sent, record(Op.RECV_OBJECT, 1, "p2p", rank=1, peer=0, tag=5))
    assert not rules.message_taken(sent, record(Op.RECV_OBJECT, 2, "p2p", rank=1, peer=0, tag=6))
    assert not rules.message_taken(sent, record(Op.SEND_OBJECT, 2, "p2p", rank=1, peer=0, tag=5))
    assert not rules.message_taken(sent, None)


# -- the p2p payload rule, on both backends ------------------------------------------------
def sizes(dist, n_sent, n_buffer, dtype="float32"):
    if dist.rank == 0:
        dist.send_tensor(torch.arange(n_sent, dtype=torch.float32), 1)
        return None
    return dist.recv_tensor(torch.zeros(n_buffer, dtype=getattr(torch, dtype)), 0).tolist()


@pytest.mark.parametrize("backend", BACKENDS)
def test_four_floats_into_a_buffer_of_eight_is_a_mismatch(backend):
    with pytest.raises(trtsim.CollectiveMismatch) as info:
        trtsim.launch(sizes, tp=2, backend=backend, args=(4, 8), timeout=60)
    err = info.value
    assert err.group_kind == "p2p" and err.ranks == (0, 1)
    assert "(tensor[float32, (4,)] sent, tensor[float32, (8,)] expected)" in str(err)
    assert err.calls[0].op == "send_tensor" and err.calls[1].op == "recv_tensor"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_dtype_that_differs_is_a_mismatch_and_a_fitting_buffer_gets_the_data(backend):
    with pytest.raises(trtsim.CollectiveMismatch, match="tensor\\[int64, \\(4,\\)\\] expected"):
        trtsim.launch(sizes, tp=2, backend=backend, args=(4, 4, "int64"), timeout=60)
    got = trtsim.launch(sizes, tp=2, backend=backend, args=(4, 4), timeout=60)
    assert got[1] == [0.0, 1.0, 2.0, 3.0]


# -- the list-length rule of intercepted torch calls, on both backends ---------------------
def short_lists(dist, call):
    import torch.distributed as td
    td.init_process_group("gloo")
    me = td.get_rank()
    if call == "all_gather":
        td.all_gather([torch.zeros(2)], torch.ones(2))
    elif call == "gather":
        td.gather(torch.ones(2), [torch.zeros(2)] if me == 0 else None, dst=0)
    elif call == "all_gather_object":
        td.all_gather_object([None], me)
    out = [torch.zeros(2), torch.zeros(2)]
    td.all_gather(out, torch.full((2,), float(me)))     # the right length: no false report
    return [t.tolist() for t in out]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("call,what", [("all_gather", "tensor_list"), ("gather", "gather_list"),
                                       ("all_gather_object", "object_list")])
def test_a_too_short_output_list_fails_the_call_on_both(backend, call, what):
    with pytest.raises(trtsim.RankFailed) as info:
        trtsim.launch(short_lists, tp=2, backend=backend, args=(call,), intercept=("torch",),
                      timeout=60)
    assert (f"ValueError: torch.distributed.{call}: {what} has 1 entries for a group of 2 "
            "ranks") in str(info.value)
    if call == "gather":
        assert info.value.rank == 0                    # only the root passes a list


@pytest.mark.parametrize("backend", BACKENDS)
def test_lists_of_the_right_length_pass(backend):
    got = trtsim.launch(short_lists, tp=2, backend=backend, args=("none",),
                        intercept=("torch",), timeout=60)
    assert list(got) == [[[0.0, 0.0], [1.0, 1.0]]] * 2


def group_method_short_list(dist):
    import torch.distributed as td
    td.init_process_group("gloo")
    group = td.new_group([0, 1])
    group.allgather([[torch.zeros(2)]], [torch.ones(2)]).wait()   # the ProcessGroup's own method


@pytest.mark.parametrize("backend,says", [
    ("inproc", "c10d.allgather: an output list has 1 entries for a group of 2 ranks"),
    ("gloo", "invalid output tensor list at index 0 (expected length 2, got 1)")])
def test_a_process_group_allgather_into_a_short_list_fails_on_both(backend, says):
    with pytest.raises(trtsim.RankFailed, match=re.escape(says)):
        trtsim.launch(group_method_short_list, tp=2, backend=backend, intercept=("torch",),
                      timeout=60)
