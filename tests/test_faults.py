"""The fault catalogue: what trtsim does when a launch goes wrong, on each backend where the
fault applies, and what each must end in. The tests assert behaviour, never elapsed time (a
busy machine stretches any time): a test that measures how long something took prints
``FIGURE name: value`` (pytest -s shows them); the targets live in benchmarks/. Waits poll
for the state they need, under generous hang guards.

| fault                                          | backends      | ends in                       |
|------------------------------------------------|---------------|-------------------------------|
| the launcher dies (SIGKILL, SIGTERM, SIGHUP)   | gloo          | nothing left, 0 shm           |
| Ctrl-C (tests/test_faults_interrupt.py)        | inproc, gloo  | exit 130, one line, 0 left    |
| a rank exits (status 0 or 3) or is killed      | gloo          | it is named, 0 left           |
| a rank forks a child and the launch ends       | gloo          | the child is gone too         |
| a rank is stopped (SIGSTOP)                    | gloo          | "stopped" in the timeout      |
| launches share a log_dir; a stale log is there | gloo          | one launch read, others named |
| a rank raises                                  | inproc, gloo  | it is named                   |
| a rank blocked in C, asleep or spinning        | inproc, gloo  | a timeout, "blocked"          |
| a deadlock among 1024 ranks                    | inproc        | reported                      |
| torchrun: a rank fails, rank 0's monitor       | torchrun      | stopped and joined, no abort  |
"""

import os
import re
import signal
import time

import pytest

import trtsim
from tests import fault_programs as fp
from tests import hygiene_programs as hp
from tests import programs
from trtsim.app.cli import main as cli_main
from trtsim.comm.launch_config import LaunchConfig
from trtsim.backends.run_ranks import run_ranks
from trtsim.layout import InstanceLayout

pytestmark = pytest.mark.timeout(240)

GONE_WITHIN_S = 60.0         # hang guard: what a launch started is gone by then (it takes ms)
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
        # fork server, 4 ranks, resource tracker
        wait_for(lambda: len(fp.descendants(launcher.pid)) >= 6, 60, "processes")
        watched = fp.descendants(launcher.pid)
        segments = fp.shm_mapped(launcher.pid)
        for f in tmp_path.glob("rank*"):
            segments |= set(f.read_text().split("\n")[1:]) - {""}
        assert len(watched) >= 5 and segments, (watched, segments)
        launcher.send_signal(getattr(signal, signame))
        launcher.wait(30)
        took, procs, shm = fp.wait_gone(watched, segments, within=GONE_WITHIN_S)
        figure(f"launcher {signame}: seconds until nothing is left", round(took, 3))
        assert not procs and not shm, f"left after {took:.1f} s: {procs} {shm}"
    finally:
        fp.end([launcher.pid, *watched], segments)
        launcher.communicate()


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
    took, procs, shm = fp.wait_gone([x["pid"] for x in out.extras], set(segments) - {""},
                                    GONE_WITHIN_S)
    assert not procs and not shm, (took, procs, shm)


def test_a_child_a_rank_forked_ends_with_the_launch(tmp_path):
    out = run_ranks(layout(2), hp.fork_a_grandchild, (str(tmp_path),),
                    LaunchConfig("gloo", timeout=60))
    grandchild = int((tmp_path / "grandchild").read_text())     # written once it ran
    try:
        assert out.error is None and out.results == [True, True], out.error  # group leaders
        took, procs, _ = fp.wait_gone([grandchild], [], GONE_WITHIN_S)
        figure("a rank's forked child: seconds from the launch's end until it is gone",
               round(took, 3))
        assert not procs, f"rank 1's child {grandchild} outlived the launch"
    finally:
        fp.end([grandchild])


def test_a_stopped_rank_is_reported_as_stopped_not_running():
    out = run_ranks(layout(2), hp.stop_one_rank, (), LaunchConfig("gloo", timeout=5))
    assert isinstance(out.error, trtsim.CollectiveTimeout), str(out.error)
    text = str(out.error)
    assert "rank 1: stopped (process state T" in text and "rank 1: running" not in text, text
    assert "rank 0: blocked in barrier" in text
    took, procs, _ = fp.wait_gone([x["pid"] for x in out.extras], [], GONE_WITHIN_S)
    assert not procs, procs                  # woken to take its SIGTERM, or killed


@pytest.mark.parametrize("backend", ["inproc", "gloo"])
def test_a_rank_that_raises_is_named(backend):
    with pytest.raises(trtsim.RankFailed) as info:
        trtsim.launch(fp.raises, tp=4, backend=backend, timeout=60)
    assert info.value.rank == 1 and "ValueError: rank 1 gave up" in info.value.summary


# -- call logs of several launches in one log_dir ------------------------------------------------
def launches_in(folder) -> dict[str, int]:
    """launch id -> how many rank logs it left in ``folder``."""
    ids = [name.split("_")[2] for name in os.listdir(folder)]
    return {i: ids.count(i) for i in ids}


def analyzed(capsys, *args) -> tuple[int, str]:
    code = cli_main(["analyze", *map(str, args)])
    out = capsys.readouterr()
    assert not out.err, out.err
    return code, out.out


def test_a_stale_log_of_an_earlier_launch_is_never_mixed_in(tmp_path, capsys):
    # A passing run, then one whose rank 1 is SIGKILLed (it leaves no log), into one folder:
    # the killed launch is read alone, rank 1 named as missing, nobody else blamed.
    logs, scratch = tmp_path / "logs", tmp_path / "scratch"
    scratch.mkdir()
    config = LaunchConfig("gloo", timeout=60, log_dir=str(logs))
    assert run_ranks(layout(4), programs.gathers, (), config).error is None
    live = run_ranks(layout(4), fp.die_midway, ("SIGKILL", str(scratch)), config).error
    assert isinstance(live, trtsim.RankFailed) and live.rank == 1, str(live)
    counts = launches_in(logs)
    [killed] = [k for k, n in counts.items() if n == 3]
    [passed] = [k for k, n in counts.items() if n == 4]
    code, out = analyzed(capsys, logs, "--launch", killed)
    assert code == 1, out
    assert f"note: partial: no call log of rank 1 of launch {killed} (4 ranks); this report " \
           "is what ranks 0, 2, 3 show" in out, out
    assert "analyze: 3 ranks" in out and "verdict: ok" in out, out     # no one blamed
    code, out = analyzed(capsys, logs)                 # the newest complete launch
    assert code == 0 and f"note: launch {passed} (started " in out, out
    assert f"analyze it with --launch {killed}" in out


def test_two_launches_into_one_log_dir_both_keep_their_evidence(tmp_path, capsys):
    logs = str(tmp_path / "logs")
    with pytest.raises(trtsim.CollectiveMismatch) as first:
        trtsim.launch(programs.skip_pp_allgather, tp=2, pp=2, backend="gloo", timeout=60,
                      log_dir=logs)
    trtsim.launch(programs.gathers, tp=2, pp=2, backend="gloo", timeout=60, log_dir=logs)
    counts = launches_in(logs)
    assert sorted(counts.values()) == [4, 4], counts      # nothing overwritten
    code, out = analyzed(capsys, logs)
    assert code == 0 and "verdict: ok" in out, out          # the newer one, consistent
    [skipped] = [k for k in counts if f"analyze it with --launch {k}" in out]
    code, out = analyzed(capsys, logs, "--launch", skipped)
    assert code == 1 and str(first.value) in out, out      # the live report, from its logs


# -- timeouts ----------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["event", "sleep", "spin"])
def test_inproc_timeout_fires_on_time_in_c_code(how):
    t0 = time.monotonic()
    with pytest.raises(trtsim.CollectiveTimeout) as info:
        trtsim.launch(fp.stall, tp=2, args=(how,), timeout=3)
    took = time.monotonic() - t0
    figure(f"inproc {how}: seconds to the timeout report (timeout 3)", round(took, 3))
    assert re.search(r"rank 1: blocked outside any collective at .*fault_programs.py:\d+ in "
                     r"stall", str(info.value)), str(info.value)
    assert "failed" not in str(info.value)


def test_gloo_timeout_ends_a_rank_blocked_in_c():
    out = run_ranks(layout(2), fp.stall, ("event",), LaunchConfig("gloo", timeout=3))
    assert isinstance(out.error, trtsim.CollectiveTimeout), str(out.error)
    assert "rank 0: blocked in barrier" in str(out.error)
    took, procs, _ = fp.wait_gone([x["pid"] for x in out.extras], [], GONE_WITHIN_S)
    assert not procs, (took, procs)


# -- deadlocks at scale ------------------------------------------------------------------------
def test_a_deadlock_among_1024_ranks_is_reported_while_the_others_finish():
    t0 = time.monotonic()
    with pytest.raises(trtsim.CollectiveDeadlock) as info:
        trtsim.launch(fp.skip_last, tp=4, pp=256, args=(50,), timeout=120)
    took = time.monotonic() - t0
    figure("1024 ranks x 50 collectives, a deadlock: seconds to the report", round(took, 3))
    assert 1023 in info.value.ranks and "rank 1023" in str(info.value)


# -- torchrun ----------------------------------------------------------------------------------
class _QuietLedger:
    """A ledger of no ranks that counts the monitor's polls."""

    num_ranks = 0

    def __init__(self):
        self.polls = 0

    def versions(self):
        self.polls += 1
        return []

    def snapshot(self, places):
        return {}


def test_the_torchrun_monitor_stops_and_joins():
    from trtsim.backends.external.store_watch import StoreWatch
    ledger = _QuietLedger()
    monitor = StoreWatch(ledger, [])
    wait_for(lambda: ledger.polls >= 2, 60, "monitor polls")     # it runs
    monitor.stop()                                               # joins the thread
    assert not monitor._thread.is_alive()


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
