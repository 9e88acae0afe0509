"""A rank's process group: whatever a rank starts ends with the launch.

A rank program may fork or start subprocesses (a data loader, a helper). Left alone, such a
child outlives its rank: it is re-parented to init, still holding the rank's gloo sockets
and the launcher's resource-tracker pipe (which keeps the tracker alive). So each rank leads
a process group of its own from its first instruction; its children and theirs are in it
unless they leave it themselves (``setsid``), and the launcher's teardown ends the whole
group, after the rank itself had its SIGTERM (and the chance to write its call log).

Leading its own group also takes the rank out of the terminal's foreground group: the
terminal's Ctrl-C reaches the launcher alone, which decides what it means.

The launcher also reads a rank's scheduling state here: a rank stopped by SIGSTOP, Ctrl-Z
or a debugger is "stopped", not "running", in a timeout's report.
"""

from __future__ import annotations

import os
import signal


def lead_own_group() -> None:
    """Make this process (a rank, just started) the leader of a new process group."""
    try:
        os.setpgid(0, 0)
    except OSError:             # already a group or session leader: it keeps the one it has
        pass


def signal_group(pid: int, sig: int) -> None:
    """Send ``sig`` to the process group that rank ``pid`` leads, if it leads one. (A pid in
    use as a group's id is not given to a new process, so the group is the rank's own for as
    long as any of its members lives.)"""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):   # no such group (any more), or not ours
        pass


def end_group(pid: int) -> None:
    """SIGKILL what is left of rank ``pid``'s group (its children), after the rank ended."""
    signal_group(pid, signal.SIGKILL)


def wake(pid: int) -> None:
    """SIGCONT to a rank's group, so a stopped rank acts on the SIGTERM it was sent."""
    signal_group(pid, signal.SIGCONT)


def process_state(pid: int) -> str | None:
    """The process's state letter of ``/proc/PID/stat`` (R, S, D, T, t, Z, ...), or None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def is_stopped(pid: int) -> bool:
    """Stopped by a signal (T) or by a tracer (t)."""
    return process_state(pid) in ("T", "t")
