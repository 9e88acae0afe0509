"""Runs ``trtsim`` commands on hostile input, each in a process of its own under a memory limit,
and says how each ended: what a user sees, without paying the start-up of one interpreter
(torch's import) per input.

``Runner`` starts a server (``python -m tests.hostile_runner FD``) that imports what the
commands import, sets ``RLIMIT_AS`` to ``LIMIT_AS`` beyond the address space the imports
took (each input gets 1 GiB of its own), then reads one JSON argument list per line on
stdin. For each it forks a child that runs ``trtsim ARGS`` (the command's own ``main``, stdin
closed) and writes how it ended to the server, which passes it on to FD: the exit status (or
``"traceback"`` when an exception escaped the command, ``"died"`` when the child ended
without a word), its stderr (and its length) and its stdout's end. A child starts from the
server's state after the imports, as fresh as a new process: nothing one input leaves behind
reaches the next, so a failure is the input's own.

The bound on time is the parent's: it waits ``LIMIT_S`` seconds for each input's result, then
kills the server's process group and the child (SIGKILL: an alarm inside the child could not
interrupt a long C-level call), reports ``"timeout"`` naming the input, with the stacks
``faulthandler`` dumped shortly before, and starts a fresh server for the next input.
"""

from __future__ import annotations

import contextlib
import faulthandler
import io
import json
import os
import resource
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback

LIMIT_AS = 2 ** 30
LIMIT_S = 20.0                 # one input, from the parent's side (a hang guard: inputs take < 1 s)
START_S = 180.0                # the server's imports, on a machine others load too
KEEP = 3000                    # characters kept of each output
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(path: str) -> int:
    """What ``trtsim run`` does with a scenario file before it runs anything: read and check
    it (``load_any``); bad input is one line and exit 2, as the command says it."""
    from trtsim.scenario.registry import load_any
    try:
        load_any(path)
    except ValueError as exc:                    # ScenarioError, BadDump: the command's bad input
        print(f"trtsim: {exc}", file=sys.stderr)
        return 2
    return 0


# Not a trtsim command: a call that holds the process in C, where a Python signal handler
# (an alarm) runs only once it returns (``system`` waits again when a signal interrupts it).
# What the runner's own bound is tested with.
C_LEVEL_HANG = ["c-level-hang"]


def run_one(argv: list[str]) -> dict:
    """``trtsim ARGV`` in this process (``["load", FILE]``: only read the scenario file): how
    it ended and what it printed."""
    from trtsim.app.cli import main
    if argv[:1] == ["load"]:
        main = lambda args: _load(args[1])     # noqa: E731
    elif argv == C_LEVEL_HANG:
        main = lambda args: os.system("sleep 3600")  # noqa: E731
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(argv)
            except SystemExit as exc:             # argparse's usage errors
                rc = exc.code
    except BaseException:                         # noqa: BLE001 - MemoryError, RecursionError
        rc = "traceback"
        err.write(traceback.format_exc(limit=-3))
    return {"argv": argv, "rc": rc, "stderr": err.getvalue()[-KEEP:],
            "stderr_chars": len(err.getvalue()), "stdout": out.getvalue()[-KEEP:]}


class Runner:
    """A server that runs inputs one at a time, each in a forked child (see the module note);
    a context manager."""

    def __init__(self, cwd: str = ROOT, limit_s: float = LIMIT_S):
        self.cwd, self.limit_s = cwd, limit_s
        self.proc = None
        self.log = tempfile.TemporaryFile()    # the server's and children's own fd 1 and 2
        self.buffer = b""

    def __enter__(self) -> "Runner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
        self.log.close()

    def _start(self) -> None:
        read, write = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.hostile_runner", str(write), str(self.limit_s)],
                cwd=self.cwd, stdin=subprocess.PIPE, stdout=self.log, stderr=self.log,
                pass_fds=(write,), start_new_session=True,  # its own process group: one kill
                # glibc reserves 64 MiB of address space per malloc arena, up to eight per
                # core, one per thread that finds the others busy: 16 rank threads reserve
                # the whole limit without using it, and thread stacks then fail to map
                env=dict(os.environ, MALLOC_ARENA_MAX="2"))
        finally:
            os.close(write)
        self.results, self.buffer = os.fdopen(read, "rb", buffering=0), b""
        if self._line(START_S) != {"ready": True}:
            self.close()
            raise RuntimeError(f"the hostile-input server did not start:\n{self._log_since(0)}")

    def close(self) -> None:
        """End the server (and a child still running): its own process group, by id."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        with contextlib.suppress(OSError):      # a request it never read: a broken pipe
            self.proc.stdin.close()
        self.results.close()
        self.proc = None

    def _line(self, limit_s: float) -> dict | None:
        """The server's next line, or None when it has none within ``limit_s`` or ends."""
        deadline = time.monotonic() + limit_s
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.results], [], [], left)[0]:
                return None
            chunk = os.read(self.results.fileno(), 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    def _log_since(self, offset: int) -> str:
        size = os.fstat(self.log.fileno()).st_size
        start = max(offset, size - KEEP)
        return os.pread(self.log.fileno(), size - start, start).decode(errors="replace")

    def run(self, argv: list) -> dict:
        """``trtsim ARGV`` in a fresh child: how it ended (see the module note)."""
        argv = list(map(str, argv))
        if self.proc is None:
            self._start()
        offset = os.fstat(self.log.fileno()).st_size
        try:
            self.proc.stdin.write((json.dumps(argv) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:                 # the server is gone: said below
            pass
        child = self._line(START_S)             # the server forks at once
        result = self._line(self.limit_s) if child else None
        if result is None:                      # a hang, or the server itself went away
            alive = self.proc.poll() is None
            with contextlib.suppress(ProcessLookupError, TypeError):
                os.kill(child["pid"], signal.SIGKILL)
            self.close()
            why = f"timeout: no result within {self.limit_s:.0f} s" if alive else "server died"
            result = {"argv": argv, "rc": why, "stderr": "", "stderr_chars": 0, "stdout": ""}
        result["log"] = self._log_since(offset)
        return result


def run(argvs: list[list[str]], cwd: str = ROOT) -> list[dict]:
    """Each of ``argvs`` run by ``Runner``, one after another."""
    with Runner(cwd) as runner:
        return [runner.run(a) for a in argvs]


def well_ended(result: dict) -> bool:
    """Exit 0, 1 or 2, no traceback, and bad input said in one line of ``trtsim: ...``."""
    err = result["stderr"]
    if result["rc"] not in (0, 1, 2) or "Traceback" in err + result.get("log", ""):
        return False
    return result["rc"] != 2 or (err.startswith("trtsim: ") and err.count("\n") == 1)


def _child(argv: list[str], write: int, limit_s: float) -> None:
    """In the forked child: run the input, write how it ended, exit without clean-up (the
    stacks go to the log shortly before the parent's bound, to say where a hang is)."""
    code = 1                                # a failure of this code: no result, "died"
    try:
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        faulthandler.dump_traceback_later(max(limit_s - 3, limit_s / 4), file=sys.__stderr__)
        data = json.dumps(run_one(argv)).encode()
        with os.fdopen(write, "wb") as f:
            f.write(data)
        code = 0
    except BaseException:                   # noqa: BLE001 - said in the log, never re-served
        traceback.print_exc()
    finally:
        os._exit(code)


def _serve(out, limit_s: float) -> None:
    """The server's loop: per input, fork a child, pass on its result or say it died."""
    def say(obj) -> None:
        out.write(json.dumps(obj).encode() + b"\n")
        out.flush()
    say({"ready": True})
    for line in sys.stdin:
        argv = json.loads(line)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            _child(argv, write, limit_s)
        os.close(write)
        say({"pid": pid})
        with os.fdopen(read, "rb") as f:
            data = f.read()
        _, status = os.waitpid(pid, 0)
        say(json.loads(data) if data else {
            "argv": argv, "rc": "died", "stderr": f"the child ended without a result: wait "
            f"status {status:#x}", "stderr_chars": 0, "stdout": ""})


def _address_space() -> int:
    """This process's address space now, in bytes (``VmSize``)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    results = os.fdopen(int(sys.argv[1]), "wb", buffering=0)
    # what the commands import, imported once here: each child starts with them
    import torch  # noqa: F401
    import trtsim.app.cli  # noqa: F401
    import trtsim.backends.inproc.world  # noqa: F401
    import trtsim.jobs.dispatch  # noqa: F401
    import trtsim.jobs.perf_run  # noqa: F401
    import trtsim.jobs.replay_job  # noqa: F401
    import trtsim.jobs.serving_job  # noqa: F401
    import trtsim.jobs.transfer_job  # noqa: F401
    import trtsim.postmortem.analysis  # noqa: F401
    import trtsim.scenario.registry  # noqa: F401
    # an input's own memory is bounded, not the imports' (torch's alone map ~600 MiB)
    limit = _address_space() + LIMIT_AS
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    _serve(results, float(sys.argv[2]))
