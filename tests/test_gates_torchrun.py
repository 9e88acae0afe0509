"""Latent gates of a torchrun job: each rank is its own process, started by torchrun, and the
ranks' gate observations are compared through the job's c10d store; every rank's
``results.latent`` lists the gate, the fixed version lists nothing, and flip is refused."""

import os
import subprocess
import sys
import textwrap

import pytest

from tests import gate_programs as gp

pytestmark = pytest.mark.timeout(300)

JOB = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {root!r})
    import trtsim
    from tests import gate_programs as gp

    if __name__ == "__main__":
        prog = getattr(gp, sys.argv[1])
        try:
            res = trtsim.launch(prog, tp=2, args=([[3, 5], [2, 2]],), backend="gloo",
                                gates=sys.argv[2], timeout=60)
        except ValueError as exc:
            os.write(1, f"RANK {{os.environ['RANK']}} REFUSED {{exc}}\\n".encode())
        else:                                    # one write a line: the ranks share stdout
            for gate in res.latent:
                os.write(1, f"RANK {{os.environ['RANK']}} {{gate.line()}}\\n".encode())
            os.write(1, f"RANK {{os.environ['RANK']}} LATENT {{len(res.latent)}}\\n".encode())
""")


def _torchrun(tmp_path, program, gates):
    job = tmp_path / "job.py"
    job.write_text(JOB.format(root=os.getcwd()))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
           "2", str(job), program, gates]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=tmp_path)


def test_observe_under_torchrun_lists_the_gate_on_every_rank(tmp_path):
    out = _torchrun(tmp_path, "dp_zero_token", "observe")
    assert out.returncode == 0, out.stderr[-3000:]
    site = f"gate_programs.py:{gp.GATE_LINES['dp_zero_token']} `num_tokens > 0`"
    for rank in (0, 1):
        assert f"RANK {rank} LATENT 1" in out.stdout, out.stdout
        line = next(ln for ln in out.stdout.splitlines() if ln.startswith(f"RANK {rank} latent"))
        assert site in line and "rank 0: num_tokens=3; rank 1: num_tokens=5" in line


def test_the_fixed_version_lists_nothing_under_torchrun(tmp_path):
    out = _torchrun(tmp_path, "dp_zero_token_fixed", "observe")
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.count("LATENT 0") == 2, out.stdout


def test_flip_under_torchrun_is_refused(tmp_path):
    out = _torchrun(tmp_path, "dp_zero_token", "flip")
    assert out.stdout.count("REFUSED gates='flip' under torchrun") == 2, \
        out.stdout + out.stderr[-2000:]


# An unmodified torchrun script whose DP-style gate skips the all-reduce on a zero-token step
# (no step here has zero tokens: the ranks agree, and differ only in the gate's operand).
SCRIPT = textwrap.dedent("""
    import torch
    import torch.distributed as dist

    def step(num_tokens):
        if num_tokens > 0:
            t = torch.tensor([float(num_tokens)])
            dist.all_reduce(t)
            return t.item()
        return 0.0

    dist.init_process_group("gloo")
    print("RESULT", step([3, 5][dist.get_rank()]))
""")


def test_the_torchrun_face_prints_the_latent_gate_once(tmp_path):
    (tmp_path / "job.py").write_text(SCRIPT)
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                          "--nproc-per-node", "2", "-m", "trtsim.torchrun", "--gates",
                          "observe", "--timeout", "60", "job.py"], capture_output=True,
                         text=True, timeout=240, cwd=tmp_path,
                         env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("latent gate:")]
    assert len(lines) == 1, out.stdout
    assert "job.py:6 `num_tokens > 0`" in lines[0]
    assert "rank 0: num_tokens=3; rank 1: num_tokens=5" in lines[0]
