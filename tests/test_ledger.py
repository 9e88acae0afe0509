"""The shared-memory ledger: rows read consistently across processes (each row behind a
process-shared mutex, whatever the CPU's memory model), and a rank that dies holding its
row's mutex cannot hang the readers."""

import multiprocessing as mp
import os

import trtsim
from trtsim.comm.process.ledger import Ledger, match_hash


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
