"""PyTorch's libraries under real torchrun (``torchrun --nproc-per-node 4 -m trtsim.torchrun
job.py``): an unmodified DTensor tensor-parallel script with a functional collective on its
mesh. A rank that never parallelizes (DTensor's ``scatter``, which its module imported by
name from ``distributed_c10d``) is one report naming that rank and the script's line; the
legal script runs clean and makes, on every rank, the calls the inproc backend counts."""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections import Counter

import pytest

import trtsim
from trtsim.comm.current import current
from trtsim.postmortem.calllog import read_call_log

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCHRUN = shutil.which("torchrun", path=os.path.dirname(sys.executable)) or "torchrun"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

# Written for torchrun, nothing of trtsim in it.
JOB = textwrap.dedent("""
    import os, sys
    import torch
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)


    def main(bug):
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        mesh = init_device_mesh("cpu", (4,), mesh_dim_names=("tp",))
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                    torch.nn.Linear(16, 4))
        if not (bug == "skip" and rank == 2):
            parallelize_module(model, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
        x = torch.arange(16.0).reshape(2, 8).requires_grad_()
        loss = model(x).square().sum()
        loss.backward()
        total = funcol.all_reduce(x.grad.sum(), "sum", mesh)
        os.write(1, f"RANK {rank} {total.item():.4f}\\n".encode())


    if __name__ == "__main__":
        main(sys.argv[1])
""")
PARALLELIZE = next(i for i, line in enumerate(JOB.splitlines(), 1)
                   if "parallelize_module(model" in line)


def _torchrun(tmp_path, *args):
    (tmp_path / "job.py").write_text(JOB)
    return subprocess.run([TORCHRUN, "--standalone", "--nproc-per-node", "4", "-m",
                           "trtsim.torchrun", "--timeout", "60", *args], capture_output=True,
                          text=True, timeout=500, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=ROOT))


def _torchrun_census(log_dir) -> dict[int, Counter]:
    """Each rank's calls in its call log, counted as a launch's census counts them:
    (iteration, group kind, label or API) -> calls."""
    out = {}
    for name in os.listdir(log_dir):
        history = read_call_log(os.path.join(log_dir, name))
        out[history.rank] = Counter((c.record.iteration, c.record.group_kind,
                                     c.record.label or c.record.api or c.record.op)
                                    for c in history.calls)
    return out


def _with_census(main):
    def program(bug):
        main(bug)
        return Counter(current().census)
    return program


def test_a_rank_that_never_parallelizes_is_one_report_naming_it_and_the_line(tmp_path):
    out = _torchrun(tmp_path, "job.py", "skip")
    assert out.returncode == 1, out.stderr[-4000:]
    # rank 2 goes on to the mesh's all-reduce while the others scatter: a mismatch
    heads = re.findall(r"^(Collective\w+): ", out.stderr, re.M)
    assert heads == ["CollectiveMismatch"], out.stderr[-4000:]
    report = out.stderr[out.stderr.index("CollectiveMismatch: "):]
    assert "rank 2: funcol.all_reduce" in report, report
    assert f"torch.scatter on world (torch:world) #1 iter 0   at job.py:{PARALLELIZE} in main" \
        in report, report
    assert "RANK" not in out.stdout


def test_the_legal_script_is_clean_with_the_calls_inproc_records(tmp_path):
    out = _torchrun(tmp_path, "--call-log-dir", str(tmp_path / "torchrun"), "job.py", "legal")
    assert out.returncode == 0, out.stderr[-4000:]
    lines = [line.split() for line in out.stdout.splitlines() if line.startswith("RANK")]
    assert sorted(int(rank) for _, rank, _ in lines) == [0, 1, 2, 3], out.stdout
    assert len({total for *_, total in lines}) == 1, out.stdout     # one sum, every rank
    spec = importlib.util.spec_from_file_location("torchrun_job", tmp_path / "job.py")
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    inproc = trtsim.launch(_with_census(job.main), tp=4, backend="inproc",
                           intercept=("torch",), args=("legal",))
    torchrun = _torchrun_census(tmp_path / "torchrun")
    assert sorted(torchrun) == [0, 1, 2, 3]
    assert any(api == "torch.scatter" for _, _, api in inproc[0]), inproc[0]
    assert {r: torchrun[r] for r in range(4)} == {r: inproc[r] for r in range(4)}
