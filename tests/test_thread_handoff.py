"""The thread runner's baton under interruption: an interruption of the hub reaches the rank
that has the turn and no other, and every rank the hub can wake ends with the launch.

A Ctrl-C (any exception from a signal handler) can land in the hub just after its
``back.acquire`` returned, the result lost: the rank had given the turn back and parked. An
asynchronous exception sent to that parked rank never lands, the rank is never woken, and
CPython 3.11 then keeps every thread's eval breaker set: under a trace function the process
spins for ever at the next call (a loaded suite run hung in hypothesis's shrinker that way).
``LateInterrupt`` makes that landing deterministic."""

import subprocess
import sys
import textwrap
import threading
import time

import pytest

from trtsim.backends.inproc.runners import ThreadRunner, Unwind

HANG_GUARD_S = 60


class LateInterrupt:
    """``back`` whose first acquire raises KeyboardInterrupt: ``after=True`` once it has
    acquired (the signal landed as the acquire returned), else before it tries, once the
    rank has released it (the signal landed while the rank was parking)."""

    def __init__(self, lock, after: bool):
        self.lock, self.after, self.fired = lock, after, False

    def acquire(self, blocking=True, timeout=-1):
        if not self.fired and not self.after:
            self.fired = True
            while self.lock.locked():              # the rank gives the turn back
                time.sleep(0.001)
            raise KeyboardInterrupt
        got = self.lock.acquire(blocking, timeout)
        if got and not self.fired:
            self.fired = True
            raise KeyboardInterrupt
        return got

    def release(self):
        self.lock.release()


def _runner(main):
    return ThreadRunner([main], deadline=time.monotonic() + HANG_GUARD_S,
                        on_timeout=TimeoutError)


def _ended(runner: ThreadRunner) -> bool:
    thread = runner.batons[0].thread
    thread.join(timeout=HANG_GUARD_S)
    return not thread.is_alive()


@pytest.mark.parametrize("after", [True, False], ids=["after-acquire", "before-acquire"])
def test_a_rank_that_gave_the_turn_back_is_not_interrupted_and_ends_with_the_launch(after):
    seen: list[type] = []

    def main():
        try:
            runner.suspend()                       # gives the turn back and parks
        except BaseException as exc:
            seen.append(type(exc))
            raise

    runner = _runner(main)
    runner.back = LateInterrupt(runner.back, after)
    with pytest.raises(KeyboardInterrupt):
        runner.resume(0, None)
    assert runner.abandoned == set()
    runner.unwind(lambda r: None)
    assert _ended(runner)
    assert seen == [Unwind]                        # woken by the launch's end, nothing else


def test_a_rank_that_has_the_turn_gets_the_interruption():
    seen: list[type] = []
    running = threading.Event()

    def main():
        try:
            running.set()
            while True:
                pass
        except BaseException as exc:
            seen.append(type(exc))
            raise

    class WhenRunning(LateInterrupt):
        def acquire(self, blocking=True, timeout=-1):
            if not self.fired:
                self.fired = True
                running.wait(HANG_GUARD_S)
                raise KeyboardInterrupt
            return self.lock.acquire(blocking, timeout)

    runner = _runner(main)
    runner.back = WhenRunning(runner.back, after=False)
    with pytest.raises(KeyboardInterrupt):
        runner.resume(0, None)
    assert _ended(runner) and seen == [KeyboardInterrupt]
    assert runner.abandoned == set()


ABANDONED_THEN_TRACED = textwrap.dedent("""
    import sys, threading, time
    from trtsim.backends.inproc.runners import ThreadRunner

    def main():
        threading.Event().wait()          # blocked in native code for ever

    runner = ThreadRunner([main], deadline=time.monotonic() + 0.2, on_timeout=TimeoutError)
    try:
        runner.resume(0, None)
    except TimeoutError:
        pass
    assert runner.abandoned == {0}

    def leaf():
        return 1

    sys.settrace(lambda *a: None)          # what coverage or a debugger installs
    leaf()
    sys.settrace(None)
    print("traced call returned")
""")


def test_a_rank_abandoned_in_native_code_leaves_traced_code_running():
    """The exception sent to a rank blocked in native code stays pending; the process must
    not spin on it (CPython 3.11's eval breaker) in the next traced call."""
    try:
        proc = subprocess.run([sys.executable, "-c", ABANDONED_THEN_TRACED],
                              capture_output=True, text=True, timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        pytest.fail("a traced call after an abandoned rank never returned")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "traced call returned"
