"""One report per job under torchrun (``-m trtsim.torchrun``) and mpirun (``-m trtsim.mpi``):
the report is printed once, by rank 0; the other ranks print nothing of trtsim's and no
traceback; the job's status is 1; torchrun's summary names one failed rank, none ended by a
signal; no store warning follows the report (the ranks leave rank 0's or the agent's store
before it goes). The script's own warnings and c10d's warnings unrelated to the store still
print. So does a script that calls ``trtsim.launch(..., backend="torchrun")`` itself under
torchrun, and ``trtsim run SCENARIO --backend torchrun`` under torchrun, whose verdict sets
the status: rank 0 prints the verdict and the report once. ``trtsim launch``'s count is in
tests/test_launch_cli.py."""

import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from tests.mpirun_jobs import ROOT, mpirun, needs_mpi

pytestmark = pytest.mark.timeout(600)
STORE_NOISE = ("TCPStore", "recvValue", "sendBytes", "Connection reset", "Broken pipe")
TORCHRUN = shutil.which("torchrun", path=os.path.dirname(sys.executable)) or "torchrun"
EXTRA = 5                   # lines of ours beyond the report and the launcher's own summary

# Written for torchrun, nothing of trtsim in it. Rank 3 warns twice: once of its own, once
# through c10d (a deprecation warning of torch's, unrelated to the store).
TORCH_JOB = textwrap.dedent("""
    import atexit, os, warnings
    import torch
    import torch.distributed as dist
    from torch.distributed import distributed_c10d

    def gloo_threads_at_exit():
        tasks = f"/proc/{os.getpid()}/task"
        names = [open(f"{tasks}/{t}/comm").read() for t in os.listdir(tasks)]
        os.write(1, f"GLOO THREADS AT EXIT {sum('gloo' in n for n in names)}\\n".encode())

    def main(kind):
        if kind == "clean":
            atexit.register(gloo_threads_at_exit)
        dist.init_process_group("gloo")
        rank = int(os.environ["RANK"])
        if rank == 3:
            warnings.warn("the script's own warning")
            distributed_c10d._get_pg_default_device()
        for step in range(3):
            if kind == "skip" and rank == 2 and step == 1:
                continue
            if kind == "raises" and rank == 1 and step == 1:
                raise KeyError("no such request")
            if kind == "other_op" and rank == 2 and step == 1:
                dist.broadcast(torch.ones(1), src=0)
                continue
            dist.all_reduce(torch.ones(1))

    if __name__ == "__main__":
        import sys
        main(sys.argv[1])
""")


# The same job with trtsim.launch as its last line, started as `torchrun ... job.py`.
# With a second argument every rank catches the report, as launch() raises it.
LAUNCH_JOB = TORCH_JOB.replace("""    main(sys.argv[1])""", """    import trtsim
    try:
        trtsim.launch(main, tp=4, backend="torchrun", intercept=("torch",), timeout=60,
                      args=(sys.argv[1],))
    except trtsim.CollectiveError as err:
        if len(sys.argv) < 3:
            raise
        os.write(1, f"CAUGHT {os.environ['RANK']} {type(err).__name__}\\n".encode())
        sys.exit(0)
    print("RETURNED", os.environ["RANK"])""")
assert LAUNCH_JOB != TORCH_JOB


def torchrun(tmp_path, *args, text=TORCH_JOB):
    script = tmp_path / "job.py"
    script.write_text(text)
    wrapped = ["-m", "trtsim.torchrun"] if text == TORCH_JOB else []
    cmd = [TORCHRUN, "--standalone", "--nproc-per-node", "4", *wrapped, str(script), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=400, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=ROOT))


def torchrun_own(lines: list[str]) -> list[str]:
    """The lines torchrun prints itself left out: its agent's log lines and, from its
    traceback on, its failure summary."""
    kept = [line for line in lines if not re.match(r"[WEI]\d{4} ", line)]
    for i, line in enumerate(kept):
        if line.startswith("Traceback") and i + 1 < len(kept) and TORCHRUN in kept[i + 1]:
            return kept[:i]
    return kept


def report_of(lines: list[str], head: str) -> tuple[list[str], list[str]]:
    """(the report's lines, the other lines)."""
    start = [i for i, line in enumerate(lines) if line.startswith(head)]
    assert len(start) == 1, lines
    end = start[0] + 1
    while end < len(lines) and lines[end].startswith("  "):
        end += 1
    return lines[start[0]:end], lines[:start[0]] + lines[end:]


@pytest.mark.parametrize("kind, head, text", [
    ("skip", "CollectiveDeadlock: 3 ranks blocked", TORCH_JOB),
    ("other_op", "CollectiveMismatch: world group [0, 1, 2, 3]", TORCH_JOB),
    ("raises", "RankFailed: rank 1 raised KeyError: 'no such request'", TORCH_JOB),
    ("skip", "CollectiveDeadlock: 3 ranks blocked", LAUNCH_JOB),
    ("raises", "RankFailed: rank 1 raised KeyError: 'no such request'", LAUNCH_JOB),
], ids=["skip", "other_op", "raises", "launch-skip", "launch-raises"])
def test_torchrun_prints_one_report_and_names_one_failed_rank(tmp_path, kind, head, text):
    out = torchrun(tmp_path, kind, text=text)
    text = out.stdout + out.stderr
    assert out.returncode == 1, text[-4000:]
    assert not any(noise in text for noise in STORE_NOISE), text[-4000:]
    # torchrun's summary: rank 0 failed with status 1, no other failure, no signal
    assert "Failures:\n  <NO_OTHER_FAILURES>" in text and text.count("exitcode  : 1") == 1
    assert "rank      : 0 (local_rank: 0)" in text and "Signal" not in text, text[-3000:]
    report, rest = report_of(torchrun_own(out.stderr.splitlines()), head)
    warnings = [line for line in rest if "UserWarning" in line]
    assert any("the script's own warning" in w for w in warnings), rest
    assert any("_get_pg_default_device" in w for w in warnings), rest
    ours = [line for line in rest if line not in warnings and not line.startswith("  ")]
    assert "Traceback" not in "\n".join(rest) and len(ours) <= EXTRA, rest
    assert len(report) >= 4 and sum("Traceback" in line for line in report) <= 1
    assert "RETURNED" not in out.stdout         # launch() ended the job: no rank went on


def test_a_report_launch_raises_under_torchrun_is_caught_on_every_rank(tmp_path):
    out = torchrun(tmp_path, "raises", "catch", text=LAUNCH_JOB)
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    assert sorted(out.stdout.splitlines()) == [f"CAUGHT {r} RankFailed" for r in range(4)]


@pytest.mark.parametrize("text", [TORCH_JOB, LAUNCH_JOB], ids=["module", "launch"])
def test_torchrun_runs_a_clean_script_with_status_0(tmp_path, text):
    out = torchrun(tmp_path, "clean", text=text)
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    assert out.stdout.count("RETURNED") == (4 if text == LAUNCH_JOB else 0)
    # trtsim's groups are freed as the rank leaves: no gloo thread is left to the
    # interpreter's exit, where one can abort the process ("terminate called ...")
    assert out.stdout.count("GLOO THREADS AT EXIT 0\n") == 4, out.stdout


# A shipped scenario on 4 ranks (ctx and gen, each PP2): its PP stages flip their sticky
# markers in different iterations, and the ctx stages deadlock, as the scenario expects.
SCENARIO = ["executor_pp_on_arrival_unguarded", "--set", "topology=tp1_pp2"]
DEADLOCK = "CollectiveDeadlock: 2 ranks blocked"
TRANSFER = ["kv_transfer", "--set", "topology=tp1_pp2"]      # holds: every block verified


def trtsim_run(tmp_path, *args):
    cmd = [TORCHRUN, "--standalone", "--nproc-per-node", "4", "-m", "trtsim", "run", *args,
           "--backend", "torchrun"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=400, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=ROOT))


@pytest.mark.parametrize("args, status, verdict, head", [
    (SCENARIO, 0, "verdict: deadlock (expected: deadlock: reproduced)", DEADLOCK),
    ([*SCENARIO, "--set", "expect=ok"], 1, "verdict: deadlock", DEADLOCK),
    ([*TRANSFER, "--set", "expect=deadlock"], 1,
     "verdict: ok (expected: deadlock: NOT reproduced), kv verified: True", None),
    (TRANSFER, 0, "verdict: ok, kv verified: True", None),
], ids=["expected-report", "unexpected-report", "expected-report-missing", "clean"])
def test_trtsim_run_under_torchrun_prints_its_verdict_once(tmp_path, args, status, verdict,
                                                           head):
    out = trtsim_run(tmp_path, *args)
    text = out.stdout + out.stderr
    assert out.returncode == status, text[-4000:]
    assert not any(noise in text for noise in STORE_NOISE), text[-4000:]
    assert "Signal" not in text and "SIGTERM" not in text, text[-3000:]
    if status:      # torchrun's summary: rank 0 failed with status 1, no other failure
        assert "Failures:\n  <NO_OTHER_FAILURES>" in text and text.count("exitcode  : 1") == 1
        assert "rank      : 0 (local_rank: 0)" in text, text[-3000:]
    else:
        assert "FAILED" not in text and "exitcode" not in text, text[-3000:]
    ours = out.stdout.splitlines() + torchrun_own(out.stderr.splitlines())
    report, rest = report_of(ours, head) if head else ([], ours)
    assert rest.count(verdict) == 1 and "note: torchrun: rank 0 of 4 (local rank 0), gloo" in rest
    assert "Traceback" not in "\n".join(ours) and "rank 1 of 4" not in text, ours
    assert len([line for line in rest if not line.startswith("  ")]) <= EXTRA, rest
    assert not head or len(report) >= 4             # the report, whole, once
    # every instance's results reached rank 0: the gen ranks' blocks are verified
    assert head or any(line.startswith("metrics: requests=3, completed=3") for line in rest)


MPI_SKIP = textwrap.dedent("""
    import warnings
    import numpy as np
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    if rank == 3:
        warnings.warn("the script's own warning")
    split = world.Split(rank // 2, rank)
    for step in range(3):
        if not (rank == 3 and step == 1):           # rank 3 skips one Allgather of its pair
            out = np.zeros(2, dtype="i")
            split.Allgather(np.array([rank], dtype="i"), out)
    world.Barrier()
""")


def prterun_own(lines: list[str]) -> list[str]:
    """The lines left after prterun's own abort message (a block between rules of dashes)."""
    kept, inside = [], False
    for line in lines:
        if set(line) == {"-"} and len(line) > 20:
            inside = not inside
            continue
        if not inside:
            kept.append(line)
    return kept


@needs_mpi
def test_mpirun_prints_one_report_and_no_store_warnings(tmp_path):
    script = tmp_path / "skip.py"
    script.write_text(MPI_SKIP)
    job = mpirun(["-m", "trtsim.mpi", str(script)], timeout=400)
    assert job.returncode == 1, job.output[-4000:]
    assert not any(noise in job.output for noise in STORE_NOISE), job.output[-4000:]
    report, rest = report_of(prterun_own(job.output.splitlines()),
                             "CollectiveDeadlock: 4 ranks blocked")
    assert any("likely: cross-group wait cycle" in line for line in report)
    warnings = [line for line in rest if "UserWarning: the script's own warning" in line]
    assert len(warnings) == 1, rest
    ours = [line for line in rest if line not in warnings and not line.startswith("  ")]
    assert "Traceback" not in job.output and len(ours) <= EXTRA, rest
