"""An unmodified mpi4py script launched by mpirun under ``python -m trtsim.mpi``: its real MPI
calls run after the guard; a skip is a report printed once with exit status 1, not a hang,
and every rank's call log reads back in ``trtsim analyze``."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.mpirun_jobs import ROOT, mpirun, needs_mpi
from tests.test_mpi_standin import RECORDED

pytestmark = [needs_mpi, pytest.mark.timeout(900)]
JOB_S = 300                  # four ranks importing torch on a loaded two-core machine


def guarded(*args: str, timeout: float = JOB_S):
    return mpirun(["-m", "trtsim.mpi", *args], timeout=timeout)


def test_legal_programs_run_their_real_calls_unreported():
    job = guarded("--tp", "2", "--pp", "2", "tests/mpi_programs.py", "all")
    assert job.returncode == 0, job.output[-3000:]
    with open(RECORDED) as f:
        assert job.results() == json.load(f)["results"]


def test_a_cross_communicator_skip_is_a_deadlock_report_with_call_logs(tmp_path):
    logs = tmp_path / "logs"
    job = guarded("--tp", "2", "--pp", "2", "--log-dir", str(logs), "tests/mpi_programs.py",
                  "cross_comm_deadlock")
    assert job.returncode == 1, job.output[-3000:]
    assert job.output.count("CollectiveDeadlock: 4 ranks blocked") == 1
    assert "likely: cross-group wait cycle" in job.output and "RESULT" not in job.output
    assert "rank 1: MPI.Barrier on world (mpi:world)" in job.output
    names = sorted(os.listdir(logs))          # one launch: the job's id in every name
    assert len({n.rsplit("_rank", 1)[0] for n in names}) == 1 and len(names) == 4, names
    analyzed = subprocess.run([sys.executable, "-m", "trtsim", "analyze", str(logs)], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
    assert analyzed.returncode == 1, analyzed.stdout + analyzed.stderr
    assert "verdict: deadlock" in analyzed.stdout
    assert "MPI.allgather on tp" in analyzed.stdout and "MPI.Barrier on world" in analyzed.stdout


def test_a_skipped_broadcast_is_a_mismatch_printed_once():
    job = guarded("--tp", "2", "--pp", "2", "tests/mpi_programs.py", "skip_header_bcast")
    assert job.returncode == 1, job.output[-3000:]
    assert job.output.count("CollectiveMismatch: world group [0, 1, 2, 3]: call #2") == 1
    assert "rank 2: MPI.Barrier on world" in job.output and "RESULT" not in job.output
    assert "Traceback" not in job.output


def test_calls_from_a_worker_thread_are_the_ranks_and_a_skip_there_is_reported(tmp_path):
    """TensorRT-LLM's executor calls MPI from its worker thread: that thread is the rank's."""
    script = tmp_path / "threaded.py"
    script.write_text(textwrap.dedent("""
        import threading
        from mpi4py import MPI

        def loop():
            comm = MPI.COMM_WORLD
            for step in range(3):
                print("STEP", comm.Get_rank(), comm.allgather(step), flush=True)
                if not (comm.Get_rank() == 2 and step == 1):
                    comm.bcast(step, root=0)

        worker = threading.Thread(target=loop)
        worker.start()
        worker.join()
        print("FINISHED", flush=True)
    """))
    job = guarded(str(script))
    assert job.returncode == 1, job.output[-3000:]
    assert "STEP 0 [0, 0, 0, 0]" in job.output and "FINISHED" not in job.output
    assert job.output.count("CollectiveMismatch: world group [0, 1, 2, 3]: call #4") == 1
    assert "rank 2: MPI.allgather on world" in job.output


def test_a_failing_script_ends_the_job_with_its_traceback(tmp_path):
    script = tmp_path / "fails.py"
    script.write_text(textwrap.dedent("""
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        if comm.Get_rank() == 1:
            raise KeyError("no such request")
        comm.Barrier()
    """))
    job = guarded(str(script))
    assert job.returncode == 1, job.output[-3000:]
    assert f'File "{script}", line 5, in <module>' in job.output
    assert "KeyError: 'no such request'" in job.output and "runpy" not in job.output


def test_a_rank_that_never_calls_is_a_timeout_report(tmp_path):
    script = tmp_path / "sleeps.py"
    script.write_text(textwrap.dedent("""
        import time
        from mpi4py import MPI
        if MPI.COMM_WORLD.Get_rank() == 3:
            time.sleep(600)
        MPI.COMM_WORLD.Barrier()
    """))
    job = guarded("--timeout", "5", str(script))
    assert job.returncode == 1, job.output[-3000:]
    assert "CollectiveTimeout: launch timed out after 5 s" in job.output
    assert "rank 3: running" in job.output and "rank 0: blocked in MPI.Barrier" in job.output


@pytest.mark.parametrize("args, phrase", [
    (["no_such_script.py"], "script='no_such_script.py': no such file"),
    (["--tp", "2", "tests/mpi_programs.py"], "mpirun started 1 ranks but the layout has 2"),
    (["--guard", "loose", "x.py"], "argument --guard: invalid choice: 'loose'"),
    (["--timeout", "-1", "x.py"], "timeout"),
])
def test_bad_input_is_one_line_and_status_2(args, phrase):
    """A single rank (an MPI singleton, no mpirun) is enough to check the arguments."""
    out = subprocess.run([sys.executable, "-m", "trtsim.mpi", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("trtsim.mpi: ") and phrase in lines[0], lines
