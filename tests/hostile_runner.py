"""Runs ``trtsim`` commands on hostile inputs in one process, under a memory limit, each under
a hang guard, and says how each ended: what a user sees, without one process per input.

``python -m tests.hostile_runner`` reads a JSON list of argument lists on stdin, sets
``RLIMIT_AS`` to ``LIMIT_AS``, runs each as ``trtsim ARGS`` (the command's own ``main``)
with an alarm of ``HANG_S`` seconds, and prints a JSON list: per input the exit status
(or ``"hang"``, or ``"traceback"`` when an exception escaped the command), its stderr (and its
length) and its stdout's end. ``run`` does it from a test, with the subprocess's own timeout as the
guard of last resort.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import signal
import subprocess
import sys
import traceback

LIMIT_AS = 2 ** 30
HANG_S = 10
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Hang(BaseException):
    """The hang guard's alarm went off."""


def _alarm(signum, frame):
    raise Hang()


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


def run_one(argv: list[str]) -> dict:
    """``trtsim ARGV`` in this process (``["load", FILE]``: only read the scenario file): how
    it ended and what it printed."""
    from trtsim.app.cli import main
    if argv[:1] == ["load"]:
        main = lambda args: _load(args[1])     # noqa: E731
    out, err = io.StringIO(), io.StringIO()
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(argv)
            except SystemExit as exc:             # argparse's usage errors
                rc = exc.code
            signal.alarm(0)
    except Hang:
        rc = "hang"
    except BaseException:                         # noqa: BLE001 - MemoryError, RecursionError
        signal.alarm(0)
        rc = "traceback"
        err.write(traceback.format_exc(limit=-3))
    return {"argv": argv, "rc": rc, "stderr": err.getvalue()[-3000:],
            "stderr_chars": len(err.getvalue()), "stdout": out.getvalue()[-3000:]}


def run(argvs: list[list[str]], cwd: str = ROOT) -> list[dict]:
    """Each of ``argvs`` run by a child process (see the module note)."""
    proc = subprocess.run([sys.executable, "-m", "tests.hostile_runner"], cwd=cwd,
                          input=json.dumps([list(map(str, a)) for a in argvs]),
                          capture_output=True, text=True,
                          timeout=60 + (HANG_S + 5) * len(argvs))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def well_ended(result: dict) -> bool:
    """Exit 0, 1 or 2, no traceback, and bad input said in one line of ``trtsim: ...``."""
    err = result["stderr"]
    if result["rc"] not in (0, 1, 2) or "Traceback" in err:
        return False
    return result["rc"] != 2 or (err.startswith("trtsim: ") and err.count("\n") == 1)


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    argvs = json.load(sys.stdin)
    # what the commands import, imported first: the hang guard times inputs, not imports
    import trtsim.app.cli  # noqa: F401
    import trtsim.postmortem.analysis  # noqa: F401
    if any(a[:1] in (["load"], ["run"]) or "--replay" in a for a in argvs):
        import trtsim.jobs.replay_job  # noqa: F401  (torch too)
        import trtsim.scenario.registry  # noqa: F401
    results = [run_one(a) for a in argvs]
    sys.stdout = sys.__stdout__
    print(json.dumps(results))
