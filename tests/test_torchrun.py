"""The same rank program runs under torchrun (env:// rendezvous), with the guard on."""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.timeout(240)

JOB = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {root!r})
    import trtsim
    from tests import programs

    if __name__ == "__main__":
        prog = getattr(programs, sys.argv[1])
        res = trtsim.launch(prog, tp=2, pp=2, backend="gloo", timeout=60)
        if os.environ["RANK"] == "0":
            same = res == trtsim.launch(prog, tp=2, pp=2, backend="inproc")
            print("SAME-AS-INPROC" if same else "DIFFERENT")
""")


def torchrun(tmp_path, program):
    job = tmp_path / "job.py"
    job.write_text(JOB.format(root=os.getcwd()))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "4",
           str(job), program]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=200, cwd=tmp_path)


def test_symmetric_program_under_torchrun(tmp_path):
    out = torchrun(tmp_path, "gathers")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "SAME-AS-INPROC" in out.stdout


def test_skip_is_reported_under_torchrun(tmp_path):
    out = torchrun(tmp_path, "skip_pp_allgather")
    assert out.returncode != 0
    assert "CollectiveMismatch: pp group [0, 2]" in out.stderr
    assert "rank 2 skipped a call" in out.stderr
