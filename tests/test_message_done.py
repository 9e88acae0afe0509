"""A completed message is not a wait. A rank shows blocked in a p2p call until its Python
resumes after the real call, so a sender can still show blocked in a send whose message the
receiver has taken, and a receiver in a receive whose message the sender has delivered. Each
side notes its completed messages in its ledger row (the last sequence per channel, in the
step that marks it running); the wait-for rule reads the peer's note.

The interleavings that produced false deadlock reports on legal pipelining code (gloo, GPipe
and Interleaved1F1B under load) are forced here with events: the peer takes (or is handed)
the message and goes on into a call that waits for the rank still held inside its finished
call. The monitor polls as often as it likes in that state and reports nothing."""

import threading
from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch

from trtsim.backends.process.ledger import Ledger
from trtsim.backends.process.monitor import DeadlockMonitor
from trtsim.backends.process.transport import TorchTransport
from trtsim.calls.records import CallRecord
from trtsim.guard.policy import GuardPolicy
from trtsim.guard.waitfor import RankState, find_deadlock, waits_for

pytestmark = pytest.mark.timeout(60)

WAIT_S = 30.0       # a bound on each event: a test that hangs is a failure, not a pass


def message(op: str, me: int, peer: int, seq: int = 1, tag: int = 0) -> CallRecord:
    sends = "send" in op
    return CallRecord(op, seq, None, 0, f"stage.py:{1700 + me} in _meta", "object", me, me,
                      "", "p2p", (me, peer) if sends else (peer, me), peer=peer, tag=tag,
                      api=f"torch.{op}")


def test_a_delivered_message_ends_the_receivers_wait():
    recv = message("recv_object", 1, 0, seq=2)
    back = message("recv_object", 0, 1)
    states = {0: RankState(0, "blocked", back), 1: RankState(1, "blocked", recv)}
    assert find_deadlock(states) == {0: (1,), 1: (0,)}
    states[0] = replace(states[0], delivered={(1, 0): 1})
    assert waits_for(states[1], states) == (0,)                 # an earlier message only
    states[0] = replace(states[0], delivered={(1, 0): 2})
    assert waits_for(states[1], states) == () and find_deadlock(states) == {}
    states[0] = replace(states[0], delivered={(1, 3): 2}, received={(1, 0): 2})
    assert find_deadlock(states) == {0: (1,), 1: (0,)}          # another tag, another side


def test_a_taken_message_ends_the_senders_wait():
    send = message("send_object", 0, 1, seq=3)
    back = message("send_object", 1, 0)
    states = {0: RankState(0, "blocked", send), 1: RankState(1, "blocked", back)}
    assert find_deadlock(states) == {0: (1,), 1: (0,)}          # nothing taken: a cycle
    states[1] = replace(states[1], received={(0, 0): 2})
    assert waits_for(states[0], states) == (1,)                 # an earlier message only
    states[1] = replace(states[1], received={(0, 0): 3})
    assert waits_for(states[0], states) == () and find_deadlock(states) == {}
    states[1] = replace(states[1], received={(0, 7): 3, (2, 0): 3})   # other channels
    assert find_deadlock(states) == {0: (1,), 1: (0,)}


def _transport(rank: int, ledger: Ledger, reports: list) -> TorchTransport:
    return TorchTransport(rank, ledger, {}, GuardPolicy("strict"), torch.device("cpu"),
                          reports.append)


def _held(entered: threading.Event, resume: threading.Event, value=None):
    """A real call's stand-in: says it is in, and returns only once allowed to."""
    def run():
        entered.set()
        assert resume.wait(WAIT_S)
        return value
    return run


def test_the_sender_held_in_its_send_after_the_receiver_took_it_is_no_deadlock():
    ledger = Ledger.create(2, [threading.Semaphore(0) for _ in range(2)])
    reports: list = []
    places = [SimpleNamespace(name=f"rank {r}") for r in range(2)]   # what a snapshot reads
    ev = {name: threading.Event() for name in ("sent", "resume0", "back_sent", "resume1")}

    def rank0():
        t = _transport(0, ledger, reports)
        t.send(message("send_object", 0, 1), None, True, _held(ev["sent"], ev["resume0"]))
        t.recv(message("recv_object", 0, 1), None, True, lambda: "reply")

    def rank1():
        t = _transport(1, ledger, reports)
        assert ev["sent"].wait(WAIT_S)
        t.recv(message("recv_object", 1, 0), None, True, lambda: "meta")
        t.send(message("send_object", 1, 0), None, True, _held(ev["back_sent"], ev["resume1"]))

    threads = [threading.Thread(target=f, daemon=True) for f in (rank0, rank1)]
    try:
        for th in threads:
            th.start()
        assert ev["back_sent"].wait(WAIT_S)
        # The interleaving: both ranks show blocked in a send to each other.
        states = ledger.snapshot(places)
        assert [(s.status, s.blocked_call.op) for s in states.values()] == \
            [("blocked", "send_object"), ("blocked", "send_object")]
        assert states[1].received == {(0, 0): 1} and states[1].delivered == {}
        # Without the receiver's note, the rule would see a cycle: the case this guards.
        assert find_deadlock({r: replace(s, received={}) for r, s in states.items()})
        monitor = DeadlockMonitor(ledger, places)
        assert [monitor.poll(now=float(i)) for i in range(1, 6)] == [None] * 5
        assert monitor.num_polls == 5
    finally:
        ev["resume0"].set()
        ev["resume1"].set()
        for th in threads:
            th.join(WAIT_S)
        ledger.close()
    assert not any(th.is_alive() for th in threads) and reports == []


def test_the_receiver_held_in_its_receive_after_the_sender_delivered_is_no_deadlock():
    ledger = Ledger.create(2, [threading.Semaphore(0) for _ in range(2)])
    reports: list = []
    places = [SimpleNamespace(name=f"rank {r}") for r in range(2)]
    ev = {name: threading.Event() for name in ("sent", "taken", "resume1", "back", "resume0")}

    def rank0():
        t = _transport(0, ledger, reports)
        t.send(message("send_object", 0, 1), None, True, ev["sent"].set)   # returns at once
        t.recv(message("recv_object", 0, 1), None, True, _held(ev["back"], ev["resume0"]))

    def rank1():
        t = _transport(1, ledger, reports)

        def taken_but_held():
            assert ev["sent"].wait(WAIT_S)          # the message is in: the call is done
            return _held(ev["taken"], ev["resume1"], "meta")()
        t.recv(message("recv_object", 1, 0), None, True, taken_but_held)
        t.send(message("send_object", 1, 0), None, True, lambda: None)

    threads = [threading.Thread(target=f, daemon=True) for f in (rank0, rank1)]
    try:
        for th in threads:
            th.start()
        assert ev["taken"].wait(WAIT_S) and ev["back"].wait(WAIT_S)
        states = ledger.snapshot(places)
        assert [(s.status, s.blocked_call.op) for s in states.values()] == \
            [("blocked", "recv_object"), ("blocked", "recv_object")]
        assert states[0].delivered == {(1, 0): 1} and states[0].received == {}
        assert find_deadlock({r: replace(s, delivered={}) for r, s in states.items()})
        monitor = DeadlockMonitor(ledger, places)
        assert [monitor.poll(now=float(i)) for i in range(1, 6)] == [None] * 5
    finally:
        ev["resume1"].set()
        ev["resume0"].set()
        for th in threads:
            th.join(WAIT_S)
        ledger.close()
    assert not any(th.is_alive() for th in threads) and reports == []
