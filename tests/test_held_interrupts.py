"""Ctrl-C while the launcher starts its helper processes: the helpers never see it, and the
launcher does, once they are started (``backends/process/interrupts``). A Ctrl-C that landed while
the fork server started used to be dropped, and the launch ran on."""

import os
import signal
import subprocess
import sys
import threading

from trtsim.backends.process.interrupts import DeferredInterrupts, interrupts_held

CHILD = "import time; time.sleep(60)"


def _blocked(pid: int) -> bool:
    with open(f"/proc/{pid}/status") as f:
        mask = next(int(line.split()[1], 16) for line in f if line.startswith("SigBlk"))
    return bool(mask & (1 << (signal.SIGINT - 1)))


def test_a_ctrl_c_while_a_helper_starts_reaches_the_launcher_afterwards_and_not_the_helper():
    seen = []
    previous = signal.signal(signal.SIGINT, lambda *_: seen.append("SIGINT"))
    child = None
    try:
        with interrupts_held():
            child = subprocess.Popen([sys.executable, "-c", CHILD])
            # The terminal's Ctrl-C, meanwhile, at the launching thread. (Sent to the process,
            # the kernel may hand it to another thread of this one that does not block it,
            # and Python runs the handler at once: the launch's DeferredInterrupts notes it.)
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            assert seen == []                            # held here
        assert seen == ["SIGINT"]                        # and delivered when the block ends
        assert _blocked(child.pid)                       # the helper never gets it
        assert not _blocked(os.getpid())
    finally:
        signal.signal(signal.SIGINT, previous)
        if child is not None:
            child.kill()
            child.wait()


def test_inside_a_deferred_block_the_held_ctrl_c_is_raised_at_its_end():
    raised = False
    try:
        with DeferredInterrupts() as deferred:
            with interrupts_held():
                os.kill(os.getpid(), signal.SIGINT)
            assert deferred.seen                         # noted, not raised, in the set-up
    except KeyboardInterrupt:
        raised = True
    assert raised
