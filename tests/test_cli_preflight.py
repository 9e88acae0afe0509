"""What the command cannot do is refused before anything runs (exit 2, one line, nothing
printed on stdout because no run started): an output path that cannot be written, two
scenarios of different kinds to compare, a GPU benchmark without a GPU. And its help lists
what it accepts: the benchmarks ``trtsim bench`` runs, exit status 130."""

import re

import pytest

from tests.test_cli import bad_input, cli

KV, PERF = "kv_transfer", "incident_sticky_skip"


def refused(out, *words):
    bad_input(out, *words)
    assert out.stdout == "", out.stdout               # no run printed a summary


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "plain.txt"
    path.write_text("x")
    return path


@pytest.mark.parametrize("flag", ["--json", "--trace"])
def test_run_checks_its_output_paths_first(flag, tmp_path, a_file):
    refused(cli("run", KV, flag, "/nonexistent/x.json"), flag, "/nonexistent", "does not exist")
    refused(cli("run", KV, flag, str(tmp_path)), flag, "is a directory")
    refused(cli("run", KV, flag, f"{a_file}/x.json"), flag, "is not a directory")
    refused(cli("run", KV, flag, "/proc/x.json"), flag, "/proc/x.json", "cannot write")


def test_compare_and_explore_check_theirs(tmp_path, a_file):
    refused(cli("compare", KV, "--set-b", "seed=1", "--json", "/nonexistent/c.json"), "--json")
    refused(cli("explore", KV, "--json", "/proc/e.json"), "--json", "cannot write")
    refused(cli("explore", KV, "--out", f"{a_file}/dir"), "--out", "not a directory")


def test_a_writable_path_is_not_refused(tmp_path):
    out = cli("run", KV, "--set", "topology=tp1_pp1", "--json", str(tmp_path / "new.json"))
    assert out.returncode == 0 and (tmp_path / "new.json").exists(), out.stderr


def test_compare_refuses_two_kinds():
    for a, b in ((PERF, KV), (KV, PERF)):
        refused(cli("compare", a, b), "compare:", "a perf", "a functional", "of one kind")


def test_bench_help_lists_what_bench_runs():
    listed = re.search(r"^benchmarks: (.*)$", cli("bench").stdout, re.M)[1]
    helped = " ".join(cli("bench", "--help").stdout.split())
    assert f"the benchmark to run: {listed} rest" in helped
    names = [n.removesuffix(" (GPU)") for n in listed.split(", ")]
    assert {"inproc", "inproc_scale", "intercept", "postmortem", "serving_sim"} <= set(names)
    assert "kernels (GPU)" in listed and "worker_step (GPU)" in listed


def test_a_gpu_benchmark_without_a_gpu_is_one_line():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present: the benchmark would run")
    for name in ("kernels", "worker_step"):
        refused(cli("bench", name), f"bench {name}", "needs a CUDA GPU")


def test_the_help_lists_every_exit_status():
    text = " ".join(cli("--help").stdout.split())
    assert all(s in text for s in ("0 the run holds", "1 an invariant", "2 bad input",
                                   "130 interrupted"))
