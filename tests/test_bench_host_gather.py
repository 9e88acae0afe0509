"""benchmarks/bench_host_gather.py: one command writes the JSON the performance model reads."""

import json
import subprocess
import sys

import pytest

from trtsim.perf.host_collectives import HostCollectiveData

SCRIPT = "benchmarks/bench_host_gather.py"


def test_a_small_gloo_run_writes_what_the_model_reads(tmp_path):
    out = tmp_path / "hg.json"
    proc = subprocess.run([sys.executable, SCRIPT, "--ranks", "2", "--iters", "5", "--warmup",
                           "2", "--loop-iters", "6", "--work-us", "300", "1200", "--json",
                           str(out)], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    run = json.loads(out.read_text())
    assert {(r["collective"], r["payload"]) for r in run["latency"]} == {
        (c, p) for c in ("allgather", "bcast") for p in ("ids", "outcome_empty", "outcome")}
    assert [j["ranks"] for j in run["jitter"]] == [2, 2]
    loop = run["jitter"][1]
    assert len(loop["work_quantiles_us"]) == 101 and loop["work"]["p50_us"] > 100
    assert loop["excess"]["samples"] == 6 and loop["wait"]["samples"] == 12
    assert run["info"]["cpus"] >= 1 and run["python_poll_s_per_request_iter"] > 0
    data = HostCollectiveData.from_dict(run)
    assert data.latency_s("gloo", 2) > 0 and data.excess_s("gloo", 2, 1e-3) >= 0
    if "mpi: mpi4py is not installed" in run["skipped"]:
        assert "MPI part skipped: mpi4py is not installed" in proc.stdout


def test_the_mpi_rank_entry_skips_cleanly_without_mpi4py():
    try:
        import mpi4py  # noqa: F401
        pytest.skip("mpi4py is installed here: the MPI part would run")
    except ImportError:
        pass
    proc = subprocess.run([sys.executable, SCRIPT, "--mpi"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0
    assert proc.stdout.strip() == "MPI part skipped: mpi4py is not installed"


def test_the_gpu_host_command_is_at_the_top_of_the_docstring():
    head = open(SCRIPT).read().split('"""')[1]
    assert "python benchmarks/bench_host_gather.py --ranks 2 8 16 --json " \
        "trtsim/perf/data/host_gather.json\n" in head
