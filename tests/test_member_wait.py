"""Strict's member wait: before its real collective a rank waits until every member has posted
the call, and the member that completes the set wakes the others.

Only a member whose first look finds every other one posted wakes anyone; a member that had to
sleep does not wake the others when it wakes, and none wakes its peers just for posting (each
sleeper would then be woken once per peer). The interleavings are forced with events on a real
shared-memory ledger, one transport per rank in a thread, the real call a stand-in."""

import threading

import pytest
import torch

from trtsim.backends.process.aborts import Reported
from trtsim.backends.process.ledger import Ledger
from trtsim.backends.process.transport import TorchTransport
from trtsim.calls.errors import CollectiveMismatch
from trtsim.calls.records import CallRecord
from trtsim.guard.policy import GuardPolicy

pytestmark = pytest.mark.timeout(60)

WAIT_S = 30.0       # a bound on each event: a test that hangs is a failure, not a pass
GROUP = (0, 1, 2)


def gather(me: int, seq: int, signature: str = "object") -> CallRecord:
    return CallRecord("allgather", seq, None, 0, "step.py:12 in step", signature, me, me, "",
                      "tp", GROUP, api="torch.all_gather_object")


class Watched:
    """A real ledger, a view of it per rank as a spawned rank attaches one, whose wake-ups are
    written down (the ranks they wake, in order) and whose sleeps say which rank went to
    sleep."""

    def __init__(self, n: int):
        wakeups = [threading.Semaphore(0) for _ in range(n)]
        self.owner = Ledger.create(n, wakeups)
        self.views = [Ledger.attach(self.owner.name, n, wakeups) for _ in range(n)]
        self.woken: list[tuple[int, ...]] = []
        self.asleep = [threading.Event() for _ in range(n)]
        for view in self.views:
            self._watch(view)

    def _watch(self, view: Ledger) -> None:
        notify, wait = view.notify, view.wait_for_post

        def noted_notify(ranks):
            self.woken.append(tuple(ranks))
            notify(ranks)

        def noted_wait(r, timeout):
            self.asleep[r].set()
            wait(r, timeout)

        view.notify, view.wait_for_post = noted_notify, noted_wait

    def close(self):
        for view in self.views:
            view.close()
        self.owner.close()


def transports(watched: Watched, reports: list) -> list[TorchTransport]:
    return [TorchTransport(r, watched.views[r], {}, GuardPolicy("strict"), torch.device("cpu"),
                           reports.append) for r in GROUP]


def in_thread(fn, results: dict, key):
    def run():
        try:
            results[key] = fn()
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            results[key] = exc
    th = threading.Thread(target=run, daemon=True)
    th.start()
    return th


def test_the_last_to_post_wakes_the_sleepers_and_nobody_else_wakes_anyone():
    watched, reports, results = Watched(3), [], {}
    ranks = transports(watched, reports)
    try:
        first = in_thread(lambda: ranks[0].collective(gather(0, 1), None, lambda: "r0"),
                          results, 0)
        assert watched.asleep[0].wait(WAIT_S)            # rank 0 posted, found nobody, sleeps
        second = in_thread(lambda: ranks[1].collective(gather(1, 1), None, lambda: "r1"),
                           results, 1)
        assert watched.asleep[1].wait(WAIT_S)            # rank 1 found rank 0 only, sleeps
        assert watched.woken == []                       # posting alone wakes nobody
        assert ranks[2].collective(gather(2, 1), None, lambda: "r2") == "r2"
        for th in (first, second):
            th.join(WAIT_S)
            assert not th.is_alive()
        assert results == {0: "r0", 1: "r1"}
        # one wake-up, from the member that completed the set, to the two that slept
        assert watched.woken == [(0, 1)]
        assert reports == []
    finally:
        watched.close()


def test_members_that_find_everyone_at_their_first_look_wake_and_sleep_nobody():
    watched, reports = Watched(3), []
    ranks = transports(watched, reports)
    try:
        for r in (1, 2):                                  # two members posted already
            watched.views[r].post(r, gather(r, 1))
        assert ranks[0].collective(gather(0, 1), None, lambda: "done") == "done"
        assert watched.woken == [(1, 2)]
        assert not watched.asleep[0].is_set()
    finally:
        watched.close()


def test_a_differing_member_is_reported_before_the_real_call_whoever_posts_last():
    watched, reports, results = Watched(3), [], {}
    ranks = transports(watched, reports)
    entered = []
    try:
        first = in_thread(lambda: ranks[0].collective(gather(0, 1), None,
                                                      lambda: entered.append(0)), results, 0)
        assert watched.asleep[0].wait(WAIT_S)
        watched.views[1].post(1, gather(1, 1))
        # the last member differs: it sees the others' records and refuses to enter
        with pytest.raises(Reported):
            ranks[2].collective(gather(2, 1, signature="tensor[4]"), None,
                                lambda: entered.append(2))
        assert entered == [] and len(reports) == 1
        assert isinstance(reports[0], CollectiveMismatch)
        # the sleeper was not woken (nobody completed the set); its next look finds the
        # differing record, and it refuses to enter too
        first.join(WAIT_S)
        assert not first.is_alive() and isinstance(results[0], Reported)
        assert entered == [] and len(reports) == 2
    finally:
        watched.close()
