"""The wait-for analysis as a pure function: slow is not stuck, stuck is explained."""

from trtsim.guard.waitfor import RankState, deadlock_error, find_deadlock, waits_for
from trtsim.calls.records import CallRecord


def rec(rank, kind, ranks, seq, op="allgather", label=None, it=0, peer=None, tag=None):
    return CallRecord(op, seq, label, it, f"prog.py:{10 + rank} in prog", "object", rank, rank,
                      "", kind, tuple(ranks), peer=peer, tag=tag)


def blocked(rank, call, posted=None, it=0, sends=()):
    return RankState(rank, "blocked", call, posted or {call.group_key: call.seq}, tuple(sends), it)


def test_waiting_on_a_running_rank_is_not_a_deadlock():
    states = {0: blocked(0, rec(0, "tp", (0, 1), 1)), 1: RankState(1, "running")}
    assert waits_for(states[0], states) == (1,)
    assert find_deadlock(states) == {}


def test_waiting_on_a_rank_that_can_still_proceed_is_not_a_deadlock():
    # rank 1 waits in pp for rank 2, which is running; rank 0 waits for rank 1 in tp.
    states = {0: blocked(0, rec(0, "tp", (0, 1), 1)),
              1: blocked(1, rec(1, "pp", (1, 2), 1)),
              2: RankState(2, "running")}
    assert find_deadlock(states) == {}


def test_a_cycle_is_a_deadlock_and_its_tail_too():
    states = {0: blocked(0, rec(0, "tp", (0, 1), 1)),
              1: blocked(1, rec(1, "pp", (1, 0), 1)),
              2: blocked(2, rec(2, "tp", (2, 0), 1))}
    assert find_deadlock(states) == {0: (1,), 1: (0,), 2: (0,)}
    err = deadlock_error(states, find_deadlock(states))
    assert err.ranks == (0, 1, 2) and "cross-group wait cycle" in err.explanation


def test_completed_calls_are_not_waits():
    call = rec(0, "tp", (0, 1), 3)
    states = {0: blocked(0, call), 1: RankState(1, "running", posted={call.group_key: 3})}
    assert waits_for(states[0], states) == ()


def test_recv_matched_by_a_pending_send_is_not_a_wait():
    states = {0: RankState(0, "running", pending_sends=((1, 5),)),
              1: blocked(1, rec(1, "p2p", (0, 1), 1, op="recv_object", peer=0, tag=5))}
    assert waits_for(states[1], states) == ()
    states[0] = RankState(0, "done", pending_sends=((1, 4),))
    assert find_deadlock(states) == {1: (0,)}
    assert "p2p tag mismatch" in deadlock_error(states, {1: (0,)}).explanation


def test_skip_is_named_when_the_peer_is_already_in_a_later_iteration():
    states = {0: blocked(0, rec(0, "pp", (0, 2), 2, it=1)),
              2: blocked(2, rec(2, "world", (0, 2), 1, op="allreduce", it=2),
                         posted={("pp", (0, 2)): 1, ("world", (0, 2)): 1}, it=2)}
    err = deadlock_error(states, find_deadlock(states))
    assert "rank 2 left iteration 1 without entering pp_allgather #2" in err.explanation
