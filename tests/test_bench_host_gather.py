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


class _OneRankComm:
    """mpi4py's COMM_WORLD of one rank, enough for the benchmark's MPI face."""

    def allgather(self, obj):
        return [obj]

    def Bcast(self, buf, root=0):        # noqa: N802 (mpi4py's spelling)
        assert root == 0

    def Barrier(self):                  # noqa: N802
        pass


def test_the_mpi_face_runs_both_measurements_on_a_fake_world(monkeypatch):
    """The MPI rank's code path (payload broadcast as header + bytes, pooled samples, the
    loop's per-iteration excess) without an MPI library: one rank."""
    import argparse
    import importlib.util
    spec = importlib.util.spec_from_file_location("bench_host_gather", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, bench)   # its dataclass looks its module up
    spec.loader.exec_module(bench)
    comm = bench.MpiComm.__new__(bench.MpiComm)
    comm.comm, comm.rank, comm.size = _OneRankComm(), 0, 1
    assert comm.bcast({"ids": [1, 2]}) == {"ids": [1, 2]}
    args = argparse.Namespace(iters=3, warmup=1, loop_iters=4, work_us=[200.0])
    res = bench.run_rank(comm, args)
    assert {r["backend"] for r in res["latency"]} == {"mpi"}
    assert all(r["samples"] == 12 for r in res["latency"])          # MPI: 4x the calls
    (loop,) = res["jitter"]
    assert loop["excess"]["p90_us"] == 0.0 and loop["wait"]["samples"] == 4   # one member
