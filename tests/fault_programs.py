"""Rank programs and process helpers of the fault catalogue (tests/test_faults.py). Module
level, so the process backends can pickle them."""

import os
import signal
import subprocess
import sys
import threading
import time


def shm_mapped(pid: int) -> set[str]:
    """The /dev/shm files process ``pid`` maps (the ledger and the semaphores)."""
    out = set()
    try:
        with open(f"/proc/{pid}/maps") as f:
            for line in f:
                path = line.split(maxsplit=5)[-1].strip()
                if path.startswith("/dev/shm/") and not path.endswith("(deleted)"):
                    out.add(path)
    except OSError:
        pass
    return {p for p in out if os.path.exists(p)}


def alive(pid: int) -> bool:
    """Running (a zombie awaiting its reaper has already ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, ...), read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), ()):
            out.append(child)
            stack.append(child)
    return out


def wait_gone(pids, paths, within: float) -> tuple[float, list[int], list[str]]:
    """Seconds until every pid ended and every path vanished (at most ``within``), and what
    was left then."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < within:
        if not any(alive(p) for p in pids) and not any(os.path.exists(p) for p in paths):
            break
        time.sleep(0.01)
    return (time.monotonic() - t0, [p for p in pids if alive(p)],
            [p for p in paths if os.path.exists(p)])


def end(pids, segments=()) -> None:
    """SIGKILL what a test started and left behind (by pid: never by name), then unlink the
    shared memory it had mapped and nobody cleaned up."""
    for p in pids:
        if alive(p):
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
    for path in segments:
        try:
            os.unlink(path)
        except OSError:
            pass


def python(code: str, *args: str, ignore_sigint: bool = False, **kw) -> subprocess.Popen:
    """A Python child that sets its own SIGINT handler, so it behaves the same whether or
    not this process ignores SIGINT (a suite started from a background shell does);
    ``ignore_sigint`` makes it inherit SIGINT ignored, as from such a shell. It leads a
    process group of its own: ``os.killpg(child.pid, SIGINT)`` is a terminal's Ctrl-C, which
    reaches every process it starts."""
    prelude = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    disposition = signal.SIG_IGN if ignore_sigint else signal.SIG_DFL

    def dispositions():
        signal.signal(signal.SIGINT, disposition)
        for sig in (signal.SIGHUP, signal.SIGTERM):     # nohup'd suites inherit SIGHUP ignored
            signal.signal(sig, signal.SIG_DFL)
    return subprocess.Popen([sys.executable, "-c", prelude + code, *args],
                            preexec_fn=dispositions,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, **kw)


# -- rank programs -------------------------------------------------------------------------
def park(dist, folder):
    """Say where this rank is (pid, shared memory), then wait for a long time."""
    dist.barrier()
    maps = "\n".join(sorted(shm_mapped(os.getpid())))
    with open(os.path.join(folder, f"rank{dist.rank}"), "w") as f:
        f.write(f"{os.getpid()}\n{maps}\n")
    time.sleep(300)


def die_midway(dist, how, folder):
    """Rank 1 ends its process in the middle of the run (``how``: an exit status, or
    ``"SIGKILL"``) while its peers enter a gather; it first notes the time and its maps."""
    dist.barrier()
    if dist.rank == 1:
        time.sleep(0.3)                        # the peers are inside the gather by now
        maps = "\n".join(sorted(shm_mapped(os.getpid())))
        with open(os.path.join(folder, "died"), "w") as f:
            f.write(f"{time.time()!r}\n{maps}\n")
        if how == "SIGKILL":
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(how)
    dist.allgather(dist.rank)
    dist.allgather(dist.rank)


def stall(dist, how):
    """Rank 1 stops outside the communicator: blocked in C, asleep, or spinning."""
    dist.barrier()
    if dist.rank == 1:
        if how == "event":
            threading.Event().wait()
        elif how == "sleep":
            time.sleep(20)
        else:
            while True:
                pass
    dist.barrier()


def raises(dist):
    """Rank 1 raises; its peers wait for it in a gather."""
    if dist.rank == 1:
        raise ValueError("rank 1 gave up")
    dist.allgather(dist.rank)


def skip_last(dist, calls):
    """The last rank returns before its last pp gather: its pp group deadlocks."""
    for i in range(calls // 2):
        dist.set_iteration(i)
        dist.tp_allgather(i, label="tp_state")
        if dist.rank == dist.world_size - 1 and i == calls // 2 - 1:
            return
        dist.pp_allgather(i, label="pp_state")
