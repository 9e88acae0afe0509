"""The process backend on a GPU machine (marker gpu): with fewer GPUs than ranks, NCCL
refuses two ranks on one GPU, so the control plane goes over gloo and the ranks share the
GPUs; the run says so, and the guard works as on the CPU."""

import pytest
import torch

import trtsim
from tests import programs
from trtsim.comm.launch_config import LaunchConfig
from trtsim.backends.run_ranks import run_ranks
from trtsim.layout import InstanceLayout

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(300)]


def run(prog, tp=2, pp=2):
    spec = trtsim.InstanceSpec(tp_size=tp, pp_size=pp)
    return run_ranks([InstanceLayout("", "", spec)], prog, (), LaunchConfig("nccl", timeout=120))


def test_fallback_shares_the_gpus_and_says_so():
    out = run(programs.gpu_tensors)
    assert out.error is None, str(out.error)
    gpus = torch.cuda.device_count()
    if gpus < 4:
        assert any("NCCL refuses two ranks on one GPU" in n for n in out.notes)
    assert [r[0] for r in out.results] == [f"cuda:{r % gpus}" for r in range(4)]
    inproc = run_ranks([InstanceLayout("", "", trtsim.InstanceSpec(2, 2))], programs.tensors,
                       (), LaunchConfig())
    assert out.results[0][1].tolist() == (torch.arange(4.0) * 2 + 1).tolist()
    assert inproc.error is None


def test_skip_is_reported_with_cuda_tensors_in_flight():
    out = run(programs.gpu_skip)
    err = out.error
    assert isinstance(err, trtsim.CollectiveMismatch)
    assert err.group_kind == "pp" and err.group_ranks == (0, 2)
    assert "rank 2 skipped a call" in str(err)


def test_kv_transfer_on_nccl_fallback():
    from trtsim.jobs.run import run as run_scenario
    res = run_scenario("scenarios/kv_transfer.yaml", backend="nccl",
                       overrides={"topology": "tp2_pp1"})
    assert res.verdict == "ok" and res.kv_verified is True
