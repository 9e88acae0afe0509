"""The command's exit statuses hold for every subcommand and scenario kind: 0 the run holds,
1 an invariant is violated, 2 bad input as one line naming file, field and value (no
traceback)."""

import json
import subprocess
import sys

import pytest


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "trtsim", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def bad_input(out, *words):
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = [line for line in out.stderr.splitlines() if not line.startswith("  ... ")]
    assert "Traceback" not in out.stderr and len(lines) == 1, out.stderr
    assert all(w in out.stderr for w in words), out.stderr


def test_functional_run_statuses():
    out = cli("run", "scenarios/kv_transfer.yaml", "--set", "topology=tp2_pp2")
    assert out.returncode == 0 and "verdict: ok, kv verified: True" in out.stdout
    out = cli("run", "scenarios/kv_transfer.yaml", "--set", "transceiver.sticky_skip=unguarded",
              "--set", "guard=lockstep")
    assert out.returncode == 1 and "CollectiveMismatch" in out.stdout
    bad_input(cli("run", "scenarios/kv_transfer.yaml", "--set", "model.window=abc"),
              "kv_transfer.yaml", "model.window", "'abc'")
    bad_input(cli("run", "scenarios/kv_transfer.yaml", "--set", "novalue"), "expected key=value")
    bad_input(cli("run", "no_such_scenario"), "no_such_scenario", "no such scenario file")


@pytest.mark.timeout(600)        # a hang guard: five perf runs, on a machine others load too
def test_perf_run_statuses():
    out = cli("run", "incident_sticky_skip", "--census")
    assert out.returncode == 0 and "8 ranks  sync" in out.stdout
    assert "calls per forward rank-iteration" in out.stdout  # --census on a perf scenario
    assert "((" not in out.stdout                            # no raw tuples
    bad_input(cli("run", "incident_sticky_skip", "--set", "gen.tp=3", "--set", "gen.ep=1"),
              "incident_sticky_skip.yaml", "gen:", "tp=3", "num_kv_heads=4")
    bad_input(cli("run", "incident_sticky_skip", "--backend", "gloo"),
              "incident_sticky_skip.yaml", "backend", "'gloo'", "does not apply")
    bad_input(cli("run", "incident_sticky_skip", "--set", "gen.ep=3"), "gen.ep")
    bad_input(cli("run", "incident_sticky_skip", "--json", "x.json", "--census-rows"),
              "--census-rows", "perf scenario")


def test_json_and_census(tmp_path):
    path = tmp_path / "r.json"
    out = cli("run", "scenarios/sticky_skip_pp_deadlock.yaml", "--json", str(path), "--census")
    assert out.returncode == 0 and "reproduced" in out.stdout and "per rank-iter" in out.stdout
    data = json.loads(path.read_text())
    assert data["verdict"] == "mismatch" and data["holds"] is True
    assert data["error"]["group_kind"] == "pp"
    bad_input(cli("run", "kv_transfer", "--json", str(tmp_path / "no" / "r.json")),
              "--json", "cannot write")
    bad_input(cli("run", "kv_transfer", "--census-rows"), "--census-rows", "--json")


def test_other_subcommands_statuses(tmp_path):
    assert cli("--version").stdout.startswith("trtsim ")
    out = cli("topologies")
    assert out.returncode == 0 and "tp4_pp2_dp_both" in out.stdout
    out = cli("scenarios", cwd=tmp_path)                     # shipped, from anywhere
    assert out.returncode == 0 and "kv_transfer" in out.stdout and "perf" in out.stdout
    out = cli("bench")
    assert out.returncode == 0 and "inproc" in out.stdout and "serving_sim" in out.stdout
    bad_input(cli("bench", "nope"), "is not one of")
    bad_input(cli("compare", "kv_transfer"), "compare:")
    bad_input(cli("compare", "kv_transfer", "--set-b", "topology=nope"), "topology", "'nope'")
    bad_input(cli("explore", "kv_transfer", "--examples", "0"), "examples=0")
    assert cli("run").returncode == 2                        # argparse's usage error


@pytest.mark.parametrize("name", ["kv_transfer", "incident_sticky_skip"])
def test_a_shipped_scenario_runs_by_name_from_any_directory(name, tmp_path):
    out = cli("run", name, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
