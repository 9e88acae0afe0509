"""The fault catalogue: what trtsim does when a launch goes wrong, on each backend where the
fault applies, and the figure each must hold. Every figure is a constant below; a test that
measures one prints ``FIGURE name: value`` (pytest -s shows them).

| fault                                          | backends      | figure                        |
|------------------------------------------------|---------------|-------------------------------|
| the launcher dies (SIGKILL, SIGTERM, SIGHUP)   | gloo          | nothing left <= 2 s, 0 shm    |
| Ctrl-C in `trtsim run`                         | inproc, gloo  | exit 130, one line, 0 left    |
| Ctrl-C in `trtsim explore`                     | inproc        | stops <= 1 s, no counterexample|
| Ctrl-C in a script calling launch              | gloo          | KeyboardInterrupt, 0 left     |
| a rank exits (status 0 or 3) or is killed      | gloo          | it is named, <= 1 s, 0 left   |
| a rank raises                                  | inproc, gloo  | it is named                   |
| a rank blocked in C, asleep or spinning        | inproc, gloo  | timeout on time, "blocked"    |
| a deadlock among 1024 ranks                    | inproc        | reported <= 15 s              |
| torchrun: a rank fails, rank 0's monitor       | torchrun      | stopped and joined, no abort  |
"""

import os
import re
import signal
import time

import pytest

import trtsim
from tests import fault_programs as fp
from trtsim.comm.launcher import LaunchConfig, run_ranks
from trtsim.layout import InstanceLayout

pytestmark = pytest.mark.timeout(240)

LEFT_WITHIN_S = 2.0          # the launcher's death: every process and segment gone by then
REPORT_WITHIN_S = 1.0        # a dead rank named: from its death to launch returning
EXPLORE_STOPS_S = 1.0        # Ctrl-C: from the signal to explore returning
TIMEOUT_LATE_S = 1.0         # a timeout reported no later than this after it passed
DEADLOCK_1024_S = 15.0       # 1024 ranks, one skips its last call: the report
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def figure(name: str, value) -> None:
    print(f"FIGURE {name}: {value}")


def layout(tp: int, pp: int = 1):
    return [InstanceLayout("", "", trtsim.InstanceSpec(tp_size=tp, pp_size=pp))]


def wait_for(predicate, within: float, what: str):
    stop = time.monotonic() + within
    while not predicate():
        assert time.monotonic() < stop, f"no {what} within {within} s"
        time.sleep(0.05)


# -- the launcher dies -----------------------------------------------------------------------
LAUNCHER = """
import sys, trtsim
from tests import fault_programs
trtsim.launch(fault_programs.park, tp=2, pp=2, backend="gloo", args=(sys.argv[1],), timeout=600)
"""


@pytest.mark.parametrize("signame", ["SIGKILL", "SIGTERM", "SIGHUP"])
def test_ranks_and_shared_memory_go_with_a_killed_launcher(tmp_path, signame):
    launcher = fp.python(LAUNCHER, str(tmp_path), cwd=ROOT)
    watched: list[int] = []
    segments: set[str] = set()
    try:
        wait_for(lambda: len(list(tmp_path.glob("rank*"))) == 4 or launcher.poll() is not None,
                 120, "ranks")
        assert launcher.poll() is None, launcher.communicate()[1][-3000:]
        time.sleep(0.2)
        watched = fp.descendants(launcher.pid)       # fork server, ranks, resource tracker
        segments = fp.shm_mapped(launcher.pid)
        for f in tmp_path.glob("rank*"):
            segments |= set(f.read_text().split("\n")[1:]) - {""}
        assert len(watched) >= 5 and segments, (watched, segments)
        launcher.send_signal(getattr(signal, signame))
        launcher.wait(30)
        took, procs, shm = fp.wait_gone(watched, segments, within=10)
        figure(f"launcher {signame}: seconds until nothing is left", round(took, 3))
        assert not procs and not shm, f"left after {took:.1f} s: {procs} {shm}"
        assert took <= LEFT_WITHIN_S
    finally:
        fp.end([launcher.pid, *watched], segments)
        launcher.communicate()


# -- Ctrl-C ------------------------------------------------------------------------------------
CLI = ("import sys, time\nfrom trtsim.app.cli import main\nrc = main(sys.argv[1:])\n"
       "print('RETURNED', time.time(), file=sys.stderr)\nsys.exit(rc)\n")
LONG_RUN = ["executor_tp4_pp2_dp_both", "--set", "workload.num_requests=5000",
            "--set", "executor.max_iterations=100000"]


def interrupt_cli(args, progress_lines: int, ignore_sigint: bool):
    """Start ``trtsim ARGS``, send SIGINT once it printed that many progress lines; return
    (exit status, stderr lines, seconds from the signal to main returning, the processes
    it had started, the shared memory they mapped)."""
    proc = fp.python(CLI, *args, ignore_sigint=ignore_sigint, cwd=ROOT)
    lines, started, segments = [], [], set()
    try:
        while sum(line.startswith("  ... ") for line in lines) < progress_lines:
            line = proc.stderr.readline()
            assert line, f"exited early: {''.join(lines)[-2000:]}"
            lines.append(line)
        started = fp.descendants(proc.pid)
        segments = set().union(*map(fp.shm_mapped, [proc.pid, *started]))
        sent = time.time()
        os.killpg(proc.pid, signal.SIGINT)         # a terminal's Ctrl-C
        _, err = proc.communicate(timeout=60)
    finally:
        fp.end([proc.pid, *started], segments)
    lines = [*map(str.rstrip, lines), *err.splitlines()]
    returned = [float(x.split()[1]) for x in lines if x.startswith("RETURNED")]
    said = [x for x in lines if x and not x.startswith(("  ... ", "RETURNED"))]
    return proc.returncode, said, returned[0] - sent if returned else None, started, segments


@pytest.mark.parametrize("backend,ignore_sigint", [
    ("inproc", False), ("inproc", True), ("gloo", False), ("gloo", True)])
def test_ctrl_c_in_run_is_interrupted(backend, ignore_sigint):
    code, said, took, started, segments = interrupt_cli(
        ["run", *LONG_RUN, "--backend", backend], 3 if backend == "gloo" else 2, ignore_sigint)
    figure(f"run {backend} Ctrl-C: seconds until main returned", took and round(took, 3))
    assert code == 130 and said == ["trtsim: interrupted"], said
    assert backend == "inproc" or segments
    took, procs, shm = fp.wait_gone(started, segments, within=10)
    assert not procs and not shm, f"left {took:.1f} s after the exit: {procs} {shm}"


@pytest.mark.parametrize("ignore_sigint", [False, True])
def test_ctrl_c_in_explore_stops_at_once_and_writes_nothing(tmp_path, ignore_sigint):
    out = tmp_path / "found"
    code, said, took, _, _ = interrupt_cli(
        ["explore", "kv_transfer", "--examples", "2000", "--vary", "workload.requests",
         "--out", str(out)], 2, ignore_sigint)
    figure("explore Ctrl-C: seconds until it returned", took and round(took, 3))
    assert code == 130 and said == ["trtsim: interrupted"], said
    assert not out.exists() or not list(out.iterdir())
    assert took is not None and took <= EXPLORE_STOPS_S


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
        took, procs, shm = fp.wait_gone(started, segments, within=10)
        assert not procs and not shm, f"left {took:.1f} s after the exit: {procs} {shm}"
    finally:
        fp.end([proc.pid, *started], segments)


# -- culprits ----------------------------------------------------------------------------------
@pytest.mark.parametrize("how,said", [
    (0, "rank 1 exited with status 0 without a result"),
    (3, "rank 1 exited with status 3 without a result"),
    ("SIGKILL", "rank 1 was killed by SIGKILL")])
def test_a_rank_that_ends_its_process_is_named(tmp_path, how, said):
    out = run_ranks(layout(4), fp.die_midway, (how, str(tmp_path)), LaunchConfig("gloo", timeout=60))
    returned = time.time()
    died, *segments = (tmp_path / "died").read_text().split("\n")
    figure(f"rank exit {how}: seconds from death to the report", round(returned - float(died), 3))
    assert isinstance(out.error, trtsim.RankFailed) and out.error.rank == 1, str(out.error)
    assert out.error.summary == said
    assert returned - float(died) <= REPORT_WITHIN_S
    took, procs, shm = fp.wait_gone([x["pid"] for x in out.extras], set(segments) - {""}, 10)
    assert not procs and not shm and took <= LEFT_WITHIN_S, (took, procs, shm)


@pytest.mark.parametrize("backend", ["inproc", "gloo"])
def test_a_rank_that_raises_is_named(backend):
    with pytest.raises(trtsim.RankFailed) as info:
        trtsim.launch(fp.raises, tp=4, backend=backend, timeout=60)
    assert info.value.rank == 1 and "ValueError: rank 1 gave up" in info.value.summary


# -- timeouts ----------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["event", "sleep", "spin"])
def test_inproc_timeout_fires_on_time_in_c_code(how):
    t0 = time.monotonic()
    with pytest.raises(trtsim.CollectiveTimeout) as info:
        trtsim.launch(fp.stall, tp=2, args=(how,), timeout=3)
    took = time.monotonic() - t0
    figure(f"inproc {how}: seconds to the timeout report (timeout 3)", round(took, 3))
    assert 3 <= took <= 3 + TIMEOUT_LATE_S
    assert re.search(r"rank 1: blocked outside any collective at .*fault_programs.py:\d+ in "
                     r"stall", str(info.value)), str(info.value)
    assert "failed" not in str(info.value)


def test_gloo_timeout_ends_a_rank_blocked_in_c():
    out = run_ranks(layout(2), fp.stall, ("event",), LaunchConfig("gloo", timeout=3))
    assert isinstance(out.error, trtsim.CollectiveTimeout), str(out.error)
    assert "rank 0: blocked in barrier" in str(out.error)
    took, procs, _ = fp.wait_gone([x["pid"] for x in out.extras], [], 10)
    assert not procs and took <= LEFT_WITHIN_S


# -- deadlocks at scale ------------------------------------------------------------------------
def test_a_deadlock_among_1024_ranks_is_reported_while_the_others_finish():
    t0 = time.monotonic()
    with pytest.raises(trtsim.CollectiveDeadlock) as info:
        trtsim.launch(fp.skip_last, tp=4, pp=256, args=(50,), timeout=120)
    took = time.monotonic() - t0
    figure("1024 ranks x 50 collectives, a deadlock: seconds to the report", round(took, 3))
    assert 1023 in info.value.ranks and "rank 1023" in str(info.value)
    assert took <= DEADLOCK_1024_S


# -- torchrun ----------------------------------------------------------------------------------
class _QuietLedger:
    num_ranks = 0

    def versions(self):
        return []

    def snapshot(self, places):
        return {}


def test_the_torchrun_monitor_stops_and_joins():
    from trtsim.comm.process.torchrun import _Monitor
    monitor = _Monitor(_QuietLedger(), [])
    time.sleep(0.3)
    t0 = time.monotonic()
    monitor.stop()
    assert not monitor._thread.is_alive() and time.monotonic() - t0 < 1.0


TORCHRUN_JOB = """
import sys
sys.path.insert(0, {root!r})
import trtsim
from tests import fault_programs
if __name__ == "__main__":
    trtsim.launch(fault_programs.raises, tp=4, backend="gloo", timeout=60)
"""


def test_a_failing_rank_under_torchrun_ends_the_job_without_an_abort(tmp_path):
    import subprocess
    import sys
    job = tmp_path / "job.py"
    job.write_text(TORCHRUN_JOB.format(root=ROOT))
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                          "--nproc-per-node", "4", str(job)], capture_output=True, text=True,
                         timeout=200, cwd=tmp_path)
    assert out.returncode != 0 and "ValueError: rank 1 gave up" in out.stderr
    assert "terminate called" not in out.stderr and "SIGABRT" not in out.stderr, out.stderr[-3000:]
