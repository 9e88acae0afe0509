"""``trtsim launch``: an unmodified torchrun script on every rank, run as torchrun's worker
would run it, guarded; torchrun's flags keep their meanings, those not done are refused."""

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.timeout(300)

# Written for torchrun: nothing of trtsim in it. Module-level code prints once per process.
WORLD_JOB = textwrap.dedent("""
    import os, sys, warnings
    import torch
    import torch.distributed as dist

    def say(*parts):                    # one write: ranks' processes share the pipe
        os.write(1, (" ".join(map(str, parts)) + "\\n").encode())

    say("MODULE", __name__, os.environ["RANK"])
    COUNTER = [0]                       # module state: each rank's own on inproc too

    def main():
        dist.init_process_group(sys.argv[1])
        rank = int(os.environ["RANK"])
        COUNTER[0] += 1
        t = torch.tensor([float(rank)])
        dist.all_reduce(t)
        env = [os.environ[k] for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE")]
        say("RANK", rank, "ENV", env, "SUM", t.item(), "ARGV", sys.argv[1:],
            "COUNTER", COUNTER[0], "BACKEND", dist.get_backend(), "ADDR",
            os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]) > 0)
        if rank == 0:
            warnings.warn("the user's own warning")
        dist.destroy_process_group()

    if __name__ == "__main__":
        main()
""")

# One rank skips an all-reduce: the report, exit status 1.
SKIP_JOB = textwrap.dedent("""
    import os
    import torch
    import torch.distributed as dist

    def main():
        dist.init_process_group("gloo")
        rank = int(os.environ["RANK"])
        for step in range(3):
            if not (rank == 2 and step == 1):
                dist.all_reduce(torch.ones(1))

    if __name__ == "__main__":
        main()
""")


def launch(tmp_path, text, *args, name="job.py"):
    script = tmp_path / name
    script.write_text(text)
    return subprocess.run([sys.executable, "-m", "trtsim", "launch", *args[:-1], str(script),
                           *args[-1]], capture_output=True, text=True, timeout=240,
                          cwd=tmp_path, env=dict(os.environ, PYTHONPATH=ROOT))


@pytest.mark.parametrize("backend", ["inproc", "gloo"])
def test_a_torchrun_script_runs_as_torchrun_runs_it(tmp_path, backend):
    out = launch(tmp_path, WORLD_JOB, "--nproc-per-node", "4", "--backend", backend,
                 ["gloo", "--flag"])
    assert out.returncode == 0, out.stderr[-3000:]
    for r in range(4):
        assert out.stdout.count(f"MODULE __main__ {r}\n") == 1     # once per rank
        assert (f"RANK {r} ENV ['{r}', '{r}', '4', '4'] SUM 6.0 ARGV ['gloo', '--flag'] "
                f"COUNTER 1 BACKEND gloo ADDR 127.0.0.1 True") in out.stdout
    assert out.stderr.count("UserWarning: the user's own warning") == 1
    assert "trtsim launch: 4 ranks (tp 4) on " + backend in out.stderr


def test_inproc_notes_the_backend_the_script_asked_for(tmp_path):
    out = launch(tmp_path, WORLD_JOB, "--nproc-per-node", "2", ["nccl"])
    assert out.returncode == 0, out.stderr[-3000:]
    assert "BACKEND nccl" in out.stdout                         # get_backend() answers it
    assert out.stderr.count("trtsim launch: note: the script asked for 'nccl'; inproc ran "
                            "its collectives in this process") == 1


def _ours(stderr: str, report_head: str) -> tuple[list[str], list[str]]:
    """(the report's lines, every other line the launch printed to stderr)."""
    lines = stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(report_head))
    end = start + 1
    while end < len(lines) and lines[end].startswith("  "):
        end += 1
    return lines[start:end], lines[:start] + lines[end:]


@pytest.mark.parametrize("backend", ["inproc", "gloo"])
def test_a_skip_is_one_report_and_status_1(tmp_path, backend):
    out = launch(tmp_path, SKIP_JOB, "--nproc-per-node", "4", "--backend", backend, [])
    assert out.returncode == 1, out.stderr[-3000:]
    head = "CollectiveDeadlock: 3 ranks blocked"
    assert out.stderr.count(head) == 1 and "Traceback" not in out.stderr
    report, others = _ours(out.stderr, head)
    assert "finished: rank 2" in "\n".join(report)
    assert report[2].endswith(" at job.py:11 in main")   # relative: below the cwd
    assert len(others) <= 5, others
    assert out.stdout == ""


def test_a_layout_is_given_or_the_world_is_one_tp_group(tmp_path):
    layout = textwrap.dedent("""
        import torch.distributed as dist
        dist.init_process_group("gloo")
        pp = dist.new_group([0, 2])
        if dist.get_rank() in (0, 2):
            dist.barrier(group=pp)
    """)
    out = launch(tmp_path, layout, "--nproc-per-node", "4", "--tp", "2", "--pp", "2", [])
    assert out.returncode == 0, out.stderr[-3000:]
    assert "4 ranks (tp 2 x pp 2) on inproc" in out.stderr


def test_a_module_runs_with_dash_m(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "train.py").write_text(WORLD_JOB)
    out = subprocess.run([sys.executable, "-m", "trtsim", "launch", "--nproc-per-node", "2",
                          "-m", "pkg.train", "gloo"], capture_output=True, text=True,
                         timeout=240, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=ROOT))
    assert out.returncode == 0, out.stderr[-3000:]
    assert "RANK 1 ENV ['1', '1', '2', '2'] SUM 1.0 ARGV ['gloo']" in out.stdout


def test_a_script_that_exits_with_a_failing_status_is_a_report(tmp_path):
    text = "import os, sys\nif os.environ['RANK'] == '1':\n    sys.exit(3)\n"
    out = launch(tmp_path, text, "--nproc-per-node", "2", [])
    assert out.returncode == 1, out.stderr[-3000:]
    assert "called sys.exit(3)" in out.stderr and out.stderr.count("RankFailed") == 1


@pytest.mark.parametrize("args, phrase", [
    (["--nproc-per-node", "4", "--tp", "3"], "--tp 3 x --pp 1 x --cp 1 lays out 3 ranks but "
     "--nproc-per-node 4 x --nnodes 1 starts 4"),
    (["--nproc-per-node", "4", "--deployment", "tp2_pp2"], "--nproc-per-node 4"),
    (["--nproc-per-node", "2", "--max-restarts", "3"], "--max-restarts: not supported"),
    (["--nproc-per-node", "2", "--rdzv-backend", "c10d"], "--rdzv-backend: not supported"),
    (["--nproc-per-node", "2", "--nnodes", "2"], "--nnodes 2"),
    (["--nproc-per-node", "0"], "--nproc-per-node 0"),
    (["--nproc-per-node", "2", "--intercept", "jax"], "--intercept 'jax'"),
    (["--nproc-per-node", "2", "--call-log-dir", "logs"], "log_dir='logs'"),
])
def test_bad_input_is_one_line_and_status_2(tmp_path, args, phrase):
    out = launch(tmp_path, SKIP_JOB, *args, [])
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and phrase in lines[0] and "Traceback" not in out.stderr, lines


def test_a_missing_script_is_bad_input(tmp_path):
    out = subprocess.run([sys.executable, "-m", "trtsim", "launch", "--nproc-per-node", "2",
                          "nowhere.py"], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, env=dict(os.environ, PYTHONPATH=ROOT))
    assert out.returncode == 2 and out.stderr.strip() == ("trtsim: script 'nowhere.py': no "
                                                          "such file"), out.stderr


def test_a_failing_script_is_a_report_with_its_own_traceback(tmp_path):
    text = "import os\nif os.environ['RANK'] == '1':\n    raise KeyError('no such request')\n"
    out = launch(tmp_path, text, "--nproc-per-node", "2", [])
    assert out.returncode == 1, out.stderr[-3000:]
    assert "RankFailed: rank 1 raised KeyError: 'no such request'" in out.stderr
    assert f'File "{tmp_path / "job.py"}", line 3, in <module>' in out.stderr
    assert "runpy" not in out.stderr and out.stderr.count("Traceback") == 1


@pytest.mark.parametrize("backend", ["inproc", "gloo"])
def test_ctrl_c_ends_the_launch_with_status_130(tmp_path, backend):
    import signal
    script = tmp_path / "job.py"
    # one write(2) a line: two ranks' lines never interleave on the shared pipe (print writes
    # the text and the newline apart)
    script.write_text("import os, time\nos.write(1, b'READY\\n')\ntime.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-m", "trtsim", "launch", "--nproc-per-node", "2",
                             "--backend", backend, str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env=dict(os.environ, PYTHONPATH=ROOT), start_new_session=True)
    try:
        assert proc.stdout.readline() == "READY\n"          # a rank runs the script
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and err.strip().endswith("trtsim: interrupted"), err
