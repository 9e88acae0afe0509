"""Latent gates of an mpirun job: an unmodified mpi4py script under ``mpirun -n N python -m
trtsim.mpi --gates observe``, each rank a process of Open MPI's, the ranks' gate observations
compared through the job's c10d store; rank 0 prints each latent gate once, the fixed version
prints none, and flip is refused (a flip replays the launch; an mpirun job runs once)."""

import subprocess
import sys
import textwrap

import pytest

from tests.mpirun_jobs import ROOT, mpirun, needs_mpi

pytestmark = [needs_mpi, pytest.mark.timeout(900)]
JOB_S = 300                  # ranks importing torch on a loaded two-core machine

# Each rank's local count decides whether it enters the all-reduce, two helper frames below
# the script's top; the counts differ (rank + 1) but stay above zero, so the ranks agree.
LATENT = textwrap.dedent("""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD

    def reduce_tokens(count):
        if count > 0:
            return comm.allreduce(count)
        return 0

    def step(count):
        return reduce_tokens(count)

    print("RESULT", comm.Get_rank(), step(comm.Get_rank() + 1), flush=True)
""")


def _site_line(source: str) -> int:
    """The line of the gate ``if count > 0:`` in a script's source."""
    return next(i for i, ln in enumerate(source.splitlines(), 1) if "if count > 0:" in ln)


# The fix: the ranks agree on the count first (an all-reduce MIN), and the gate reads that.
FIXED = LATENT.replace("    if count > 0:",
                       "    agreed = comm.allreduce(count, op=MPI.MIN)\n"
                       "    if agreed > 0:")
assert FIXED != LATENT


def _observe(tmp_path, source: str, ranks: int = 2):
    script = tmp_path / "job.py"
    script.write_text(source)
    return mpirun(["-m", "trtsim.mpi", "--gates", "observe", "--timeout", "120", str(script)],
                  timeout=JOB_S, ranks=ranks)


def _gate_lines(output: str) -> list[str]:
    return [ln for ln in output.splitlines() if ln.startswith("latent gate:")]


def test_observe_under_mpirun_prints_the_latent_gate_once_with_its_site(tmp_path):
    job = _observe(tmp_path, LATENT)
    assert job.returncode == 0, job.output[-3000:]
    assert sorted(ln for ln in job.output.splitlines() if ln.startswith("RESULT")) == \
        ["RESULT 0 3", "RESULT 1 3"], job.output[-3000:]       # the real all-reduce ran
    lines = _gate_lines(job.output)
    assert len(lines) == 1, job.output[-3000:]
    assert f"job.py:{_site_line(LATENT)} `count > 0`" in lines[0], lines[0]
    assert "allreduce" in lines[0] and "rank 0: count=1; rank 1: count=2" in lines[0], lines[0]


def test_the_fixed_version_prints_nothing_under_mpirun(tmp_path):
    job = _observe(tmp_path, FIXED)
    assert job.returncode == 0, job.output[-3000:]
    assert sorted(ln for ln in job.output.splitlines() if ln.startswith("RESULT")) == \
        ["RESULT 0 3", "RESULT 1 3"], job.output[-3000:]
    assert _gate_lines(job.output) == [], job.output[-3000:]


# Four ranks, TP pairs {0, 1} and {2, 3} by a real Split: the gate's operand differs in the
# first pair only (3 against 5), so the second pair's all-reduce is no latent gate.
BY_GROUP = textwrap.dedent("""
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    tp = world.Split(color=world.Get_rank() // 2, key=world.Get_rank())

    def reduce_tokens(count):
        if count > 0:
            return tp.allreduce(count)
        return 0

    print("RESULT", world.Get_rank(), reduce_tokens([3, 5, 2, 2][world.Get_rank()]), flush=True)
""")


def test_each_group_is_compared_on_its_own_under_mpirun(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(BY_GROUP)
    job = mpirun(["-m", "trtsim.mpi", "--tp", "2", "--pp", "2", "--gates", "observe",
                  "--timeout", "120", str(script)], timeout=JOB_S, ranks=4)
    assert job.returncode == 0, job.output[-3000:]
    assert sorted(ln for ln in job.output.splitlines() if ln.startswith("RESULT")) == \
        ["RESULT 0 8", "RESULT 1 8", "RESULT 2 4", "RESULT 3 4"], job.output[-3000:]
    lines = _gate_lines(job.output)
    assert len(lines) == 1, job.output[-3000:]
    assert f"job.py:{_site_line(BY_GROUP)} `count > 0`" in lines[0], lines[0]
    assert "on tp" in lines[0] and "on ranks [0, 1]" in lines[0], lines[0]
    assert "rank 0: count=3; rank 1: count=5" in lines[0], lines[0]


def test_without_gates_nothing_is_printed_for_the_latent_script(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(LATENT)
    job = mpirun(["-m", "trtsim.mpi", "--timeout", "120", str(script)], timeout=JOB_S, ranks=2)
    assert job.returncode == 0, job.output[-3000:]
    assert "RESULT 0 3" in job.output and _gate_lines(job.output) == [], job.output[-3000:]


def test_flip_under_mpirun_is_refused_in_one_line(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(LATENT)
    job = mpirun(["-m", "trtsim.mpi", "--gates", "flip", str(script)], timeout=JOB_S, ranks=2)
    assert job.returncode == 2, job.output[-3000:]
    refusals = [ln for ln in job.output.splitlines() if ln.startswith("trtsim.mpi: ")]
    expected = ("trtsim.mpi: argument --gates: 'flip': a flip replays the launch, and a job "
                "mpirun starts runs each rank's program once; --gates observe lists the "
                "latent gates")
    assert refusals == [expected], job.output[-3000:]
    assert "Traceback" not in job.output and "RESULT" not in job.output


@pytest.mark.parametrize("value, phrase", [
    ("flip", "argument --gates: 'flip': a flip replays the launch"),
    ("often", "argument --gates: invalid choice: 'often' (choose from 'off', 'observe')"),
])
def test_a_bad_gates_value_is_one_line_and_status_2(value, phrase):
    """A single rank (an MPI singleton, no mpirun) is enough to check the argument."""
    out = subprocess.run([sys.executable, "-m", "trtsim.mpi", "--gates", value, "x.py"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("trtsim.mpi: ") and phrase in lines[0], lines


def test_an_mpirun_job_with_flip_is_refused_on_construction(tmp_path):
    from trtsim.backends.external.mpirun import MpirunJob
    from trtsim.comm.launch_config import LaunchConfig
    script = tmp_path / "job.py"
    script.write_text(LATENT)
    with pytest.raises(ValueError, match=r"^gates='flip': a flip replays the launch"):
        MpirunJob(str(script), (), (), LaunchConfig("gloo", gates="flip"))
