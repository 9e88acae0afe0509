"""Carrying out ``worker_logs``' plan: each rank's stdout and stderr to its log file, and the
tee'd files copied to the launcher's console, line by line after the rank's prefix.

A process rank (gloo, nccl) is its own process, so its file descriptors 1 and 2 are pointed
at its files (``redirect_process``): everything the process writes goes there, C++ and
child processes included. Inproc ranks share one process and its descriptors, so there a
rank's stdout and stderr are what the script writes through ``sys.stdout`` and
``sys.stderr`` while that rank runs (``print``, ``warnings``, ``logging`` handlers made by
the script, tracebacks): during the launch both are a ``RoutedStream`` that sends a write to
the file of the rank whose context makes it (``route_inproc``). A write to the descriptor
itself (``os.write(1, ...)``, native code), or from a thread the script starts (a new
thread's context is empty), reaches the console on inproc. Either way the
console copy is the launcher's (``ConsoleTee``), as torchrun's agent tails its workers' files.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from contextvars import ContextVar
from typing import IO, Iterator

from ..safe_write import open_log
from .worker_logs import CONSOLE, RankStreams, WorkerLogs

# The local rank whose writes a RoutedStream routes, in that rank's own context (inproc).
_ROUTE: ContextVar = ContextVar("trtsim_worker_route", default=None)


class RoutedStream:
    """``sys.stdout`` (or ``sys.stderr``) of an inproc launch: a write goes to the current
    rank's own target when it has one, to the process's stream otherwise."""

    def __init__(self, real, targets: dict[int, IO[str]]):
        self.real, self.targets = real, targets

    def _target(self):
        rank = _ROUTE.get()
        return self.targets.get(rank, self.real) if rank is not None else self.real

    def write(self, text: str) -> int:
        target = self._target()
        count = target.write(text)
        if target is not self.real:
            target.flush()                       # the console copy reads the file
        return count

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._target().flush()

    def __getattr__(self, name: str):            # encoding, isatty, fileno, ...: the process's
        return getattr(self.real, name)


def route_inproc(local_rank: int) -> None:
    """From now on, this rank's context writes to its own files (inproc)."""
    _ROUTE.set(local_rank)


def redirect_process(streams: RankStreams) -> None:
    """This process's descriptors 1 and 2 to the rank's files (a process rank); the streams
    are line-buffered from now on, so a rank ended by the launch leaves its lines written."""
    for fd, path, stream in ((1, streams.stdout, sys.stdout), (2, streams.stderr, sys.stderr)):
        if path == CONSOLE:
            continue
        stream.flush()
        target = open_log(path)
        os.dup2(target, fd)
        os.close(target)
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(line_buffering=True)


class ConsoleTee:
    """Copies files to console streams as they grow, each line after its prefix, in a thread;
    ``stop()`` copies what is left (a last line without its newline gets one) and ends it."""

    def __init__(self, sources: list[tuple[str, IO[str], str]], interval: float = 0.05):
        self._sources = [(open(path, "rb"), dst, prefix.encode()) for path, dst, prefix in sources]
        self._pending = [b""] * len(self._sources)
        self._stop = threading.Event()
        self._interval = interval
        self._thread = threading.Thread(target=self._run, name="trtsim-tee", daemon=True)
        self._thread.start()

    def _copy(self, final: bool) -> None:
        for i, (src, dst, prefix) in enumerate(self._sources):
            *lines, rest = (self._pending[i] + src.read()).split(b"\n")
            if final and rest:
                lines, rest = [*lines, rest], b""
            self._pending[i] = rest
            if lines:
                dst.write("".join((prefix + line).decode(errors="replace") + "\n"
                                  for line in lines))
                dst.flush()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._copy(final=False)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._copy(final=True)
        for src, _, _ in self._sources:
            src.close()


@contextlib.contextmanager
def worker_output(logs: WorkerLogs | None, backend: str) -> Iterator[None]:
    """Around a launch: every log file made empty, the console copies running, and on inproc
    ``sys.stdout``/``sys.stderr`` routed by rank; all undone (the copies finished) after."""
    if logs is None:
        yield
        return
    for streams in logs.ranks:
        for path in streams.files:
            os.close(open_log(path, truncate=True))     # there before the copy opens it
    out, err = sys.stdout, sys.stderr
    tee = ConsoleTee([(s.stdout, out, s.prefix) for s in logs.ranks if s.tee_stdout]
                     + [(s.stderr, err, s.prefix) for s in logs.ranks if s.tee_stderr])
    opened: dict[str, IO[str]] = {}
    try:
        if backend == "inproc":
            def targets(which: str) -> dict[int, IO[str]]:
                chosen = {r: getattr(s, which) for r, s in enumerate(logs.ranks)}
                for path in set(chosen.values()) - {CONSOLE} - set(opened):
                    opened[path] = os.fdopen(open_log(path), "a", encoding="utf-8")
                return {r: opened[p] for r, p in chosen.items() if p != CONSOLE}
            sys.stdout = RoutedStream(out, targets("stdout"))   # type: ignore[assignment]
            sys.stderr = RoutedStream(err, targets("stderr"))   # type: ignore[assignment]
        yield
    finally:
        sys.stdout, sys.stderr = out, err
        for f in opened.values():
            f.close()
        tee.stop()
