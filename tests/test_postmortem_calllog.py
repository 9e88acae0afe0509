"""trtsim's own call logs (``launch(..., log_dir=...)``) from real gloo runs: written on exit,
on SIGTERM and on timeout, read post mortem into the live guard's own report, replayed."""

import itertools
import json
import os
import subprocess
import sys
import textwrap

import pytest

import trtsim
from tests import postmortem_logs as logs
from trtsim.jobs.replay_job import reproducing_seed
from trtsim.postmortem.analysis import analyze
from trtsim.postmortem.inputs import load_job
from trtsim.postmortem.replay import build_replay

pytestmark = pytest.mark.timeout(300)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))




def analysis_of(runs, run):
    return analyze(load_job([os.path.join(runs, run)]))


@pytest.mark.parametrize("run", sorted(set(logs.RUNS) - {"skip_guard_off"}))
def test_the_logs_give_the_live_report_and_the_replay_reproduces_it(runs, run):
    found = analysis_of(runs, run)
    live = logs.live(runs, run)
    assert live is not None and str(found.error) == str(live)
    seed, replayed = reproducing_seed(build_replay(found))
    assert replayed.reproduced, replayed.summary()


def test_a_p2p_tag_mismatch_comes_from_the_logs(runs):
    for run in ("p2p_tag_mismatch", "torch_p2p_tag_mismatch"):
        err = analysis_of(runs, run).error
        assert err.kind == "deadlock" and err.explanation.endswith("p2p tag mismatch")
    job = load_job([os.path.join(runs, "p2p_tag_mismatch")])
    assert job.histories[0].pending_sends == ((1, 1),)       # rank 0's isend, tag 1


def test_a_guard_off_run_is_judged_after_the_fact(runs):
    # Guard off, the real communicator paired rank 2's iteration-2 gather with rank 0's
    # iteration-1 one; the run ended in a deadlock that names no cause. The logs carry
    # iterations, so the post-mortem reports the skip itself, as strict mode would have.
    assert logs.live(runs, "skip_guard_off").kind == "deadlock"
    found = analysis_of(runs, "skip_guard_off").error
    assert str(found) == str(logs.live(runs, "skip"))
    assert "rank 2 skipped a call" in found.explanation


def test_logs_say_where_each_rank_was(runs):
    by = {h.rank: h for h in load_job([os.path.join(runs, "raising_rank")]).histories}
    assert by[1].status == "failed" and by[1].failure == "RuntimeError: boom on rank 1"
    assert "boom on rank 1" in by[1].traceback
    assert by[0].status == "blocked" and by[0].blocked.record.label == "b"
    assert by[0].written_on == "signal"            # ended by the launcher's teardown
    assert {by[2].written_on, by[2].status} == {"exit", "done"}


_SIGNALLED = textwrap.dedent("""
    import json, os, signal, sys, time
    sys.path.insert(0, {root!r})
    from trtsim.comm.launch_config import LaunchConfig
    from trtsim.backends.process import call_log_writer as call_log
    from trtsim.calls.records import CallRecord
    from trtsim.layout.topology import InstanceSpec
    from trtsim.layout.places import InstanceLayout, rank_places
    places = rank_places([InstanceLayout("", "", InstanceSpec(tp_size=2))])
    logger = call_log.start(LaunchConfig("gloo", timeout=0.3, log_dir={out!r}), 0, places)
    logger.posted(CallRecord("allgather", 1, "x", 0, "a.py:1 in f", "object", 0, 0, "", "tp",
                             (0, 1)))
    def written_on():
        try:
            with open(logger.path) as f:
                return json.load(f)["written_on"]
        except (OSError, ValueError):   # not yet there, or half-renamed
            return None
    while written_on() != "timeout":    # the launch's timeout passes: the log is written
        time.sleep(0.01)                # (the test's subprocess timeout is the hang guard)
    print(open(logger.path).read(), flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
    while True:                         # the handler writes the log and ends the rank
        signal.pause()
""")


def test_a_rank_writes_its_log_on_timeout_and_on_sigterm(tmp_path):
    script = tmp_path / "rank.py"
    script.write_text(_SIGNALLED.format(root=ROOT, out=str(tmp_path / "logs")))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == -15, out.stderr            # SIGTERM still ends the rank
    at_timeout = json.loads(out.stdout)
    assert (at_timeout["written_on"], at_timeout["status"]) == ("timeout", "blocked")
    [log] = (tmp_path / "logs").glob("trtsim_calls_*rank0.json")
    final = json.loads(log.read_text())
    assert final["written_on"] == "signal" and final["calls"][0][:2] == ["allgather", 1]


def test_log_dir_is_for_the_process_backends():
    with pytest.raises(ValueError, match="log_dir"):
        trtsim.launch(lambda d: None, backend="inproc", log_dir="x")


_JOB = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    import trtsim
    from tests import programs
    if __name__ == "__main__":
        trtsim.launch(programs.early_exit, tp=2, backend="gloo", timeout=30,
                      log_dir=sys.argv[1])
""")


def test_a_torchrun_job_leaves_logs_that_give_its_report(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(_JOB.format(root=ROOT))
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                          "--nproc-per-node", "2", str(job), str(tmp_path / "logs")],
                         capture_output=True, text=True, timeout=200, cwd=ROOT)
    assert out.returncode != 0
    # The report: its first line and the indented ones after it (torchrun's own log lines
    # and the ranks' tracebacks may follow in any order).
    lines = out.stderr[out.stderr.index("CollectiveDeadlock"):].splitlines()
    printed = "\n".join([lines[0], *itertools.takewhile(lambda l: l.startswith("  "), lines[1:])])
    found = analyze(load_job([str(tmp_path / "logs")]))
    assert str(found.error) == printed


def test_a_deployments_logs_name_ranks_by_instance(runs):
    err = analysis_of(runs, "deployment_skip").error
    assert err.summary.startswith("tp group [2, 3]: call #2 differs in iteration "
                                  "(gen rank 0 (global 2): 1, gen rank 1 (global 3): 2)")
    layout = load_job([os.path.join(runs, "deployment_skip")]).layout
    assert [row[:2] for row in layout] == [("ctx", "ctx"), ("gen", "gen")]
