"""Call records: the hot path's constructor (``record_of``, every field in order) makes what
the keyword constructor makes, and the records a launch keeps are complete ones."""

from hypothesis import given, strategies as st

import trtsim
from trtsim.comm.launch_config import LaunchConfig
from trtsim.backends.run_ranks import run_ranks
from trtsim.calls.records import CallRecord, record_of
from trtsim.layout import InstanceLayout

texts = st.text(max_size=8)
fields = st.tuples(st.sampled_from(["allgather", "broadcast", "send_tensor"]), st.integers(1, 99),
                   st.none() | texts, st.integers(0, 9), texts, texts, st.integers(0, 7),
                   st.integers(0, 7), texts, st.sampled_from(["tp", "pp", "world", "p2p"]),
                   st.tuples(st.integers(0, 7), st.integers(0, 7)), st.none() | st.integers(0, 1),
                   st.none() | st.sampled_from(["sum", "max"]), st.none() | st.integers(0, 7),
                   st.none() | st.integers(0, 3), st.floats(0, 1), texts, texts, texts)


@given(values=fields)
def test_record_of_every_field_is_the_record_the_constructor_makes(values):
    assert len(values) == len(CallRecord._fields)
    made = record_of(values)
    assert type(made) is CallRecord and made == CallRecord(*values)
    assert made._asdict() == dict(zip(CallRecord._fields, values))


def _prog(dist):
    dist.set_iteration(3)
    dist.tp_allgather(dist.rank, label="state")
    dist.pp_broadcast(None, root=1)


def test_a_launch_records_every_field_of_its_calls():
    spec = trtsim.InstanceSpec(tp_size=2, pp_size=2, enable_attention_dp=False)
    out = run_ranks([InstanceLayout("", "", spec)], _prog, (), LaunchConfig(trace=True))
    recs = [rec for _, rec in out.trace if rec.rank == 2]
    gather, bcast = recs
    assert (gather.op, gather.seq, gather.label, gather.iteration, gather.group_kind,
            gather.group_ranks, gather.rank, gather.local_rank) == (
        "allgather", 1, "state", 3, "tp", (2, 3), 2, 2)
    assert (bcast.op, bcast.root, bcast.group_kind, bcast.group_ranks, bcast.label) == (
        "broadcast", 1, "pp", (0, 2), None)
    assert gather.callsite.endswith("in _prog") and "_prog" in bcast.purpose
