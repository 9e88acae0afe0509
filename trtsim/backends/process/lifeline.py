"""A rank process's tie to its launcher: the rank dies with the launcher, whatever kills it.

Ranks fork from multiprocessing's fork server, not from the launcher, and the kernel's
parent-death signal (``PR_SET_PDEATHSIG``) can only name a process's own parent. So the tie
is a chain, with no step that needs Python code to run in the rank (a rank stuck in C code
holding the GIL dies too):

1. the launcher dies (SIGKILL, SIGTERM, SIGHUP, the OOM killer): the kernel closes its end of
   the fork server's "alive" pipe;
2. the server sees EOF on that pipe and exits -- provided no rank holds a copy of the write
   end, which the server hands to every child; ``leave_server`` closes the rank's copy;
3. the server's children, the ranks, get SIGKILL from the kernel (``arm``);
4. the resource tracker, whose pipe the launcher and the ranks held, sees EOF and unlinks the
   shared-memory ledger and the semaphores it was told about.

Linux only (``prctl``); elsewhere the launcher's own teardown still ends the ranks.
"""

from __future__ import annotations

import os
import signal
from typing import Any

_PR_SET_PDEATHSIG = 1


def server_pid() -> int | None:
    """The fork server's pid, read in the launcher after the first rank started (the
    server is started by that first ``Process.start``)."""
    from multiprocessing import forkserver
    return getattr(forkserver._forkserver, "_forkserver_pid", None)  # noqa: SLF001


def arm(parent: int | None) -> None:
    """Ask the kernel to SIGKILL this process when its parent (the fork server) exits; exit
    now if the parent is already gone (it died before the request took effect)."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            return
    except (OSError, AttributeError):       # not Linux: the launcher's teardown applies
        return
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def leave_server() -> None:
    """Close this rank's copy of the fork server's alive pipe, so the launcher holds the
    last one and the server exits when the launcher dies. (The rank could only have used it
    to ask the server for processes of its own; one it starts gets a server of its own.)"""
    from multiprocessing import forkserver
    server: Any = forkserver._forkserver  # noqa: SLF001 - the standard library keeps it private
    fd = getattr(server, "_forkserver_alive_fd", None)
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass
        server._forkserver_alive_fd = None
        server._forkserver_pid = None
        server._forkserver_address = None


def ignore_interrupts() -> None:
    """Ctrl-C reaches every process of the terminal's foreground group; the launcher alone
    decides what an interrupt means and ends the ranks, so a rank ignores SIGINT (instead of
    reporting a KeyboardInterrupt of its own as a rank failure)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
