"""benchmarks/bench_host_gather.py: one command writes the JSON the performance model reads,
measured as a deployment runs (ranks pinned one per core, GC frozen), with the launches that
are not a deployment's kept out of the prices."""

import argparse
import importlib.util
import json
import subprocess
import sys

import pytest

from trtsim.perf.host_collectives import HostCollectiveData

SCRIPT = "benchmarks/bench_host_gather.py"


@pytest.fixture
def bench(monkeypatch):
    spec = importlib.util.spec_from_file_location("bench_host_gather", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)   # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def test_a_small_gloo_run_writes_what_the_model_reads(tmp_path):
    out = tmp_path / "hg.json"
    proc = subprocess.run([sys.executable, SCRIPT, "--ranks", "2", "--backends", "gloo",
                           "--loop-backends", "gloo", "--gloo-runs", "2", "--iters", "5",
                           "--warmup", "2", "--loop-iters", "6", "--work-us", "300", "1200",
                           "--json", str(out)], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    run = json.loads(out.read_text())
    assert run["schema"] == 2 and run["info"]["physical_cores"] >= 1
    assert "frozen" in run["info"]["gc"]
    rows = run["latency"]
    assert {(r["collective"], r["payload"]) for r in rows} == {
        (c, p) for c in ("allgather", "bcast") for p in ("ids", "outcome_empty", "outcome")}
    assert {r["run"] for r in rows} == {0, 1} and all(r["pinned"] for r in rows)
    assert all(r["cpus"] == [0, 1] or len(r["cpus"]) == 2 for r in rows)
    loops = run["jitter"] + run["excluded"]       # a busy 2-core VM may hold neither speed
    assert sorted((j["run"], j["work_us_target"]) for j in loops) == [
        (0, 300.0), (0, 1200.0), (1, 300.0), (1, 1200.0)]
    loop = loops[0]
    assert len(loop["relative_quantiles"]) == 200 and loop["excess"]["samples"] == 6
    assert loop["relative_quantiles"] == sorted(loop["relative_quantiles"])
    assert run["python_poll_s_per_request_iter"] > 0
    data = HostCollectiveData.from_dict(run)
    assert data.latency_s("gloo", 2) > 0 and data.wait_s("gloo", 2, 1e-3) >= 0


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
    assert "python benchmarks/bench_host_gather.py --squeeze 4 --json " \
        "trtsim/perf/data/host_gather.json\n" in head


def _loop(run, p10, p50, p90, ranks=2, target=1000.0, pinned=True):
    return {"backend": "mpi", "ranks": ranks, "run": run, "work_us_target": target,
            "work": {"p10_us": p10, "p50_us": p50, "p90_us": p90}, "pinned": pinned,
            "relative_quantiles": [0.9, 1.0, 1.1]}


def test_launches_whose_cores_ran_at_two_speeds_are_kept_out_of_the_prices(bench):
    out = {"jitter": [_loop(0, 950, 1000, 1080),                   # held its calibration
                      _loop(1, 950, 1000, 1800),                   # a tenth at half speed
                      _loop(2, 450, 1000, 1100, ranks=8),          # some cores twice as fast
                      _loop(3, 950, 2000, 2100, ranks=8),          # most at half speed
                      _loop(4, 950, 1000, 1050, pinned=False),
                      _loop(5, 950, 1000, 1050), _loop(5, 950, 1600, 1700, target=4000.0)],
           "excluded": []}
    kept = bench.classify(out)
    assert [r["run"] for r in kept["jitter"]] == [0]
    why = {r["run"]: r["why"] for r in kept["excluded"]}
    assert set(why) == {1, 2, 3, 4, 5}
    assert "cores of two speeds" in why[1] and why[4] == "ranks not pinned"
    # one loop of a launch that strayed takes the whole launch out
    assert sum(r["run"] == 5 for r in kept["excluded"]) == 2


def test_merge_combines_runs_and_classifies(bench, tmp_path):
    parts = []
    for i, loops in enumerate(([_loop(0, 950, 1000, 1050)], [_loop(0, 400, 1000, 1050, 8)])):
        path = tmp_path / f"p{i}.json"
        path.write_text(json.dumps({"schema": 2, "info": {"command": f"run {i}"},
                                    "latency": [], "jitter": loops, "excluded": [],
                                    "skipped": []}))
        parts.append(str(path))
    merged = bench.merge(parts)
    assert [r["ranks"] for r in merged["jitter"]] == [2]
    assert [r["ranks"] for r in merged["excluded"]] == [8]
    assert [r["command"] for r in merged["info"]["runs"]] == ["run 0", "run 1"]


class _OneRankComm:
    """mpi4py's COMM_WORLD of one rank, enough for the benchmark's MPI face."""

    def allgather(self, obj):
        return [obj]

    def Bcast(self, buf, root=0):        # noqa: N802 (mpi4py's spelling)
        assert root == 0

    def Barrier(self):                  # noqa: N802
        pass


def test_the_mpi_face_runs_both_measurements_on_a_fake_world(bench):
    """The MPI rank's code path (payload broadcast as header + bytes, pooled samples, the
    loop's per-iteration excess and relative spread) without an MPI library: one rank."""
    comm = bench.MpiComm.__new__(bench.MpiComm)
    comm.comm, comm.rank, comm.size = _OneRankComm(), 0, 1
    assert comm.bcast({"ids": [1, 2]}) == {"ids": [1, 2]}
    args = argparse.Namespace(iters=3, warmup=1, loop_iters=4, work_us=[200.0],
                              loop_backends=["mpi"])
    res = bench.run_rank(comm, args)
    assert {r["backend"] for r in res["latency"]} == {"mpi"}
    assert all(r["samples"] == 12 for r in res["latency"])          # MPI: 4x the calls
    (loop,) = res["jitter"]
    assert loop["excess"]["p90_us"] == 0.0 and loop["relative_excess"]["mean"] == 0.0
    assert sum(loop["relative_quantiles"]) / 200 == pytest.approx(1.0, rel=0.05)
