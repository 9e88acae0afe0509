"""``torchrun ... -m trtsim.torchrun script.py``: each torchrun worker runs the unmodified
script guarded, writes its call log for ``trtsim analyze``, and refuses bad input in one line
(the job's single report is tests/test_one_report.py's)."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCHRUN = shutil.which("torchrun", path=os.path.dirname(sys.executable)) or "torchrun"
pytestmark = pytest.mark.timeout(600)

# Written for torchrun: rank 1 skips the gather of its TP pair, the others wait.
JOB = textwrap.dedent("""
    import os, sys
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    pair = [dist.new_group([0, 1]), dist.new_group([2, 3])][rank // 2]
    out = [torch.zeros(1), torch.zeros(1)]
    if rank != 1:
        dist.all_gather(out, torch.ones(1) * rank, group=pair)
    os.write(1, f"RANK {rank} {os.environ['LOCAL_RANK']} {sys.argv[1:]} {out[1].item()}\\n".encode())
""")


# Started before trtsim in every worker (a sitecustomize): the first rank starts only once
# another worker has ended or 3 s have passed, as on a busy machine where it comes last.
FIRST_COMES_LAST = textwrap.dedent("""
    import os, time
    rank, here = os.environ.get("RANK"), os.environ.get("TRTSIM_TEST_DIR")
    if rank is not None and here is not None:
        if rank != "0":
            with open(os.path.join(here, f"pid{rank}.tmp"), "w") as f:
                f.write(str(os.getpid()))
            os.rename(os.path.join(here, f"pid{rank}.tmp"), os.path.join(here, f"pid{rank}"))
        else:
            def alive(r):
                path = os.path.join(here, f"pid{r}")
                return not os.path.exists(path) or os.path.exists(f"/proc/{open(path).read()}")
            deadline = time.monotonic() + 3
            peers = range(1, int(os.environ["WORLD_SIZE"]))
            while all(alive(r) for r in peers) and time.monotonic() < deadline:
                time.sleep(0.01)
""")


def torchrun(tmp_path, *args, nproc: int = 4, first_comes_last: bool = False):
    script = tmp_path / "job.py"
    script.write_text(JOB)
    path, env = ROOT, {}
    if first_comes_last:
        (tmp_path / "site").mkdir()
        (tmp_path / "site" / "sitecustomize.py").write_text(FIRST_COMES_LAST)
        path, env = f"{tmp_path / 'site'}{os.pathsep}{ROOT}", {"TRTSIM_TEST_DIR": str(tmp_path)}
    return subprocess.run([TORCHRUN, "--standalone", "--nproc-per-node", str(nproc), "-m",
                           "trtsim.torchrun", *args], capture_output=True, text=True,
                          timeout=400, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=path, **env))


def test_a_tp_layout_skip_is_reported_and_the_call_logs_read_back(tmp_path):
    logs = tmp_path / "logs"
    out = torchrun(tmp_path, "--tp", "2", "--pp", "2", "--call-log-dir", str(logs),
                   "--timeout", "60", "job.py", "x")
    assert out.returncode == 1, out.stderr[-4000:]
    assert out.stderr.count("CollectiveDeadlock") == 1, out.stderr[-4000:]
    assert "RANK 2 2 ['x'] 3.0" in out.stdout and "RANK 1 1 ['x'] 0.0" in out.stdout
    assert len(os.listdir(logs)) == 4, os.listdir(logs)
    analyzed = subprocess.run([sys.executable, "-m", "trtsim", "analyze", str(logs)], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
    assert analyzed.returncode == 1, analyzed.stdout + analyzed.stderr
    assert "torch.all_gather" in analyzed.stdout


# Two workers are enough to see one line from one of them. Under load torchrun's agent can end
# the first worker as soon as another has failed: the last case makes it come last.
@pytest.mark.parametrize("args, phrase, first_comes_last", [
    (["--tp", "3", "job.py"], "--tp 3 x --pp 1 x --cp 1 lays out 3 ranks but torchrun "
     "started 2", False),
    (["nowhere.py"], "script 'nowhere.py': no such file", False),
    (["--guard", "loose", "job.py"], "argument --guard: invalid choice: 'loose'", True),
], ids=["layout", "script", "flag-first-comes-last"])
def test_bad_input_is_one_line_from_one_rank_and_status_2(tmp_path, args, phrase,
                                                           first_comes_last):
    out = torchrun(tmp_path, *args, nproc=2, first_comes_last=first_comes_last)
    assert out.returncode != 0
    ours = [line for line in out.stderr.splitlines() if line.startswith("trtsim.torchrun: ")]
    assert len(ours) == 1 and phrase in ours[0], out.stderr[-3000:]
    assert "Traceback (most recent call last):\n  File \"<frozen runpy>\"" not in out.stderr


def test_outside_torchrun_it_says_how_to_run_it():
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    out = subprocess.run([sys.executable, "-m", "trtsim.torchrun", "job.py"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120,
                         env=dict(env, PYTHONPATH=ROOT))
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "not set: run it under torchrun" in out.stderr
