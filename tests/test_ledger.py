"""The shared-memory ledger: rows read consistently across processes (each row behind a
process-shared mutex, whatever the CPU's memory model), and a rank that dies holding its
row's mutex cannot hang the readers."""

import multiprocessing as mp
import os

import numpy as np
from hypothesis import given, strategies as st

import trtsim
from trtsim.backends.process.ledger import Ledger
from trtsim.backends.process.record_codec import RecordCodec, match_hash


def _record(seq: int) -> trtsim.CallRecord:
    # Every field the match hash covers changes with seq, so a sequence paired with another
    # call's hash or record is caught.
    return trtsim.CallRecord(op="allgather", seq=seq, label=f"call{seq}", iteration=seq,
                             callsite="x.py:1 in f", signature="object", rank=0,
                             group_kind="tp", group_ranks=(0, 1))


def _writer(name: str, calls: int) -> None:
    ledger = Ledger.attach(name, 2)
    for seq in range(1, calls + 1):
        ledger.post(0, _record(seq))
    ledger.set_status(0, "done")
    ledger.close()


def _die_holding_the_row(name: str) -> None:
    ledger = Ledger.attach(name, 2)
    ledger.locks.row(1).__enter__()         # taken and never released
    os._exit(0)


def test_a_reader_never_pairs_one_calls_sequence_with_anothers_hash():
    ledger = Ledger.create(2)
    try:
        proc = mp.get_context("spawn").Process(target=_writer, args=(ledger.name, 3000))
        proc.start()
        checked = 0
        while proc.is_alive() or not checked:
            seq, digest = ledger.read_seq_hash(0, _record(1))
            if seq:
                assert digest == match_hash(_record(seq)), seq
                call = ledger.read_call(0, _record(1))
                assert call.seq >= seq and call.label == f"call{call.seq}"
                checked += 1
        proc.join(60)
        assert proc.exitcode == 0 and ledger.read_seq_hash(0, _record(1))[0] == 3000
    finally:
        ledger.close()


def test_a_dead_holder_does_not_hang_the_monitor():
    ledger = Ledger.create(2)
    try:
        proc = mp.get_context("spawn").Process(target=_die_holding_the_row, args=(ledger.name,))
        proc.start()
        proc.join(60)
        assert proc.exitcode == 0
        ledger.set_status(1, "failed")          # EOWNERDEAD: taken, made consistent
        assert int(ledger.versions()[1]) == 1
    finally:
        ledger.close()


_text = st.text(max_size=12)


@given(records=st.lists(st.builds(
    trtsim.CallRecord, op=st.sampled_from(["allgather", "broadcast", "allreduce"]),
    seq=st.integers(1, 10**6), label=st.none() | _text, iteration=st.integers(0, 10**6),
    callsite=st.sampled_from(["a.py:1 in f", "b.py:9 in g"]), signature=_text,
    group_kind=st.sampled_from(["tp", "pp", "group"]), group_ranks=st.just((0, 1)),
    root=st.none() | st.integers(0, 1), clock=st.floats(0, 1e6), purpose=_text,
    comm=st.sampled_from(["", "torch:1"])), min_size=1, max_size=30))
def test_the_codec_gives_back_each_record_and_its_match_hash(records):
    # A call site's template is pickled once; seq, iteration and clock come from the columns.
    codec = RecordCodec()
    for rec in records:
        data, digest = codec.encode(rec)
        assert digest == match_hash(rec)
        assert RecordCodec.decode(data, rec.seq, rec.iteration, rec.clock) == rec


def test_a_slot_reads_back_the_last_record_posted_there():
    ledger = Ledger.create(2)
    try:
        for seq, label in [(1, "a"), (2, "a"), (3, "b"), (4, "a")]:
            rec = _record(seq)._replace(label=label)
            assert ledger.post(0, rec) == match_hash(rec)
            assert ledger.read_call(0, rec) == rec
            assert ledger.read_seq_hash(0, rec) == (seq, match_hash(rec))
    finally:
        ledger.close()


@given(num_ranks=st.integers(1, 40))
def test_the_block_is_laid_out_once_areas_apart_and_inside(num_ranks):
    # ``LAYOUT`` is the one table: every area starts on a 64-byte line after the previous
    # one's end, and the block's size is where the last one ends.
    from trtsim.backends.process.ledger_layout import LAYOUT, placed
    areas = placed(num_ranks)
    assert [a[0] for a in areas] == [name for name, *_ in LAYOUT]
    end = 0
    for name, dtype, shape, off in areas:
        assert off % 64 == 0 and off >= end, name
        end = off + int(np.prod(shape)) * np.dtype(dtype).itemsize
    assert Ledger.size(num_ranks) == (end + 63) // 64 * 64


def test_each_view_is_its_own_area_of_the_block():
    ledger = Ledger.create(3)
    try:
        for name, *_ in placed_areas():
            if name == "locks":
                continue
            view = getattr(ledger, name)
            before = {n: getattr(ledger, n).copy() for n, *_ in placed_areas()
                      if n not in ("locks", name)}
            view.fill(7)
            assert all(np.array_equal(getattr(ledger, n), v) for n, v in before.items()), name
            view.fill(0)
        assert ledger.locks is not None
    finally:
        ledger.close()


def placed_areas():
    from trtsim.backends.process.ledger_layout import placed
    return placed(3)
