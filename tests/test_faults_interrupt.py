"""The fault catalogue's Ctrl-C cases (tests/test_faults.py lists them all): a terminal's
Ctrl-C in ``trtsim run`` (at any moment of a gloo launch), in ``trtsim explore`` and in a
script that calls launch ends in one line (or a KeyboardInterrupt from Python) and leaves
no process or shared memory behind. The moments are found by events (lines printed,
processes started), never by sleeping."""

import os
import signal
import threading
import time

import pytest

from tests import fault_programs as fp
from tests.test_faults import GONE_WITHIN_S, LAUNCHER, ROOT, figure, wait_for

pytestmark = pytest.mark.timeout(240)


# -- Ctrl-C ------------------------------------------------------------------------------------
CLI = ("import sys, time\nfrom trtsim.app.cli import main\nrc = main(sys.argv[1:])\n"
       "print('RETURNED', time.time(), file=sys.stderr)\nsys.exit(rc)\n")
LONG_RUN = ["executor_tp4_pp2_dp_both", "--set", "workload.num_requests=5000",
            "--set", "executor.max_iterations=100000"]


def progress(lines_wanted: int):
    """The moment the command has printed that many progress lines."""
    return lambda pid, lines: sum(x.startswith("  ... ") for x in lines) >= lines_wanted


def processes(wanted: int):
    """The moment the command has that many processes below it (the fork server and the
    resource tracker come first, then the ranks)."""
    return lambda pid, lines: len(fp.descendants(pid)) >= wanted


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def fork_server_importing(pid, lines) -> bool:
    """The moment the fork server runs and no rank does yet: it is importing torch (seconds)."""
    below = fp.descendants(pid)
    return len(below) <= 2 and any("forkserver" in cmdline(p) for p in below)


def interrupt_cli(args, moment, ignore_sigint: bool):
    """Start ``trtsim ARGS``, send SIGINT at ``moment`` (a predicate over its pid and the
    stderr lines so far); return (exit status, stderr lines, seconds from the signal to main
    returning, the processes it had started, the shared memory they mapped)."""
    proc = fp.python(CLI, *args, ignore_sigint=ignore_sigint, cwd=ROOT)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")),
                              daemon=True)
    reader.start()
    started, segments = [], set()
    try:
        wait_for(lambda: moment(proc.pid, list(lines)) or proc.poll() is not None, 240,
                 "moment to interrupt")
        assert proc.poll() is None, f"exited early: {''.join(lines)[-2000:]}"
        started = fp.descendants(proc.pid)
        segments = set().union(*map(fp.shm_mapped, [proc.pid, *started]))
        sent = time.time()
        os.killpg(proc.pid, signal.SIGINT)         # a terminal's Ctrl-C
        proc.wait(timeout=120)
        reader.join(60)
    finally:
        fp.end([proc.pid, *started], segments)
    lines = [x.rstrip() for x in lines]
    returned = [float(x.split()[1]) for x in lines if x.startswith("RETURNED")]
    said = [x for x in lines if x and not x.startswith(("  ... ", "RETURNED"))]
    return proc.returncode, said, returned[0] - sent if returned else None, started, segments


@pytest.mark.parametrize("backend,ignore_sigint", [
    ("inproc", False), ("inproc", True), ("gloo", False), ("gloo", True)])
def test_ctrl_c_in_run_is_interrupted(backend, ignore_sigint):
    code, said, took, started, segments = interrupt_cli(
        ["run", *LONG_RUN, "--backend", backend], progress(3 if backend == "gloo" else 2),
        ignore_sigint)
    figure(f"run {backend} Ctrl-C: seconds until main returned", took and round(took, 3))
    assert code == 130 and said == ["trtsim: interrupted"], said
    assert backend == "inproc" or segments
    took, procs, shm = fp.wait_gone(started, segments, within=GONE_WITHIN_S)
    assert not procs and not shm, f"left {took:.1f} s after the exit: {procs} {shm}"


@pytest.mark.parametrize("moment", ["fork server imports", "a rank starts", "first progress"])
def test_ctrl_c_at_any_moment_of_a_gloo_run_is_one_line(moment):
    # The fork server imports torch for seconds after it starts, and ranks fork from it one
    # by one: a Ctrl-C in either used to print a forkserver traceback under the one line.
    when = {"fork server imports": fork_server_importing, "a rank starts": processes(3),
            "first progress": progress(1)}[moment]
    code, said, _, started, segments = interrupt_cli(
        ["run", *LONG_RUN, "--backend", "gloo"], when, False)
    assert code == 130 and said == ["trtsim: interrupted"], "\n".join(said)
    took, procs, shm = fp.wait_gone(started, segments, within=GONE_WITHIN_S)
    assert not procs and not shm, f"left {took:.1f} s after the exit: {procs} {shm}"


@pytest.mark.parametrize("ignore_sigint", [False, True])
def test_ctrl_c_in_explore_stops_at_once_and_writes_nothing(tmp_path, ignore_sigint):
    out = tmp_path / "found"
    code, said, took, _, _ = interrupt_cli(
        ["explore", "kv_transfer", "--examples", "2000", "--vary", "workload.requests",
         "--out", str(out)], progress(2), ignore_sigint)
    figure("explore Ctrl-C: seconds until it returned", took and round(took, 3))
    assert code == 130 and said == ["trtsim: interrupted"], said
    assert not out.exists() or not list(out.iterdir())
    assert took is not None                          # main returned (no hang, no kill)


@pytest.mark.parametrize("ignore_sigint", [False, True])
def test_ctrl_c_in_a_launching_script_leaves_no_rank(tmp_path, ignore_sigint):
    proc = fp.python(LAUNCHER, str(tmp_path), ignore_sigint=ignore_sigint, cwd=ROOT)
    started: list[int] = []
    segments: set[str] = set()
    try:
        wait_for(lambda: len(list(tmp_path.glob("rank*"))) == 4 or proc.poll() is not None,
                 120, "ranks")
        started = fp.descendants(proc.pid)
        segments = set().union(*map(fp.shm_mapped, [proc.pid, *started]))
        os.killpg(proc.pid, signal.SIGINT)         # a terminal's Ctrl-C
        _, err = proc.communicate(timeout=60)
        assert proc.returncode != 0 and "KeyboardInterrupt" in err, err[-2000:]
        assert "RankFailed" not in err and segments
        took, procs, shm = fp.wait_gone(started, segments, within=GONE_WITHIN_S)
        assert not procs and not shm, f"left {took:.1f} s after the exit: {procs} {shm}"
    finally:
        fp.end([proc.pid, *started], segments)
