"""Scenario input: unknown keys, wrong types, impossible values are one-line errors naming
file, key and value; the CLI exits 2 for them, 1 for a violated invariant, 0 when it holds."""

import json
import pathlib
import subprocess
import sys

import pytest

from trtsim.scenario.functional import ScenarioError, load_scenario


@pytest.mark.parametrize("overrides,message", [
    ({"topology": "tp3"}, "topology: unknown topology 'tp3'"),
    ({"transceiver.sticky_skip": "sometimes"}, "transceiver.sticky_skip: sticky_skip='sometimes'"),
    ({"transceiver.bogus": 1}, "transceiver.bogus: 1 is not a known key"),
    ({"model.window": "abc"}, "model.window: 'abc' must be null, a positive integer"),
    ({"model.head_dim": 0}, "model.head_dim: head_dim=0 must be an integer >= 1"),
    ({"workload.requests": [30, -1]}, "workload.requests: requests=[30, -1]"),
    ({"guard": "loose"}, "guard: 'loose' is not one of strict, lockstep, off"),
    ({"seed": "x"}, "seed: 'x' must be int"),
    ({"timeout": -1}, "timeout: -1 must be > 0 seconds"),
    ({"executor.loop": "pp"}, "executor.loop: 'pp' does not fit"),
    ({"faults": {7: "ctx_fail"}}, "faults.7: 'ctx_fail' names no request (0..2)"),
    ({"faults": {0: "explode"}}, "faults.0: 'explode' is not one of"),
    ({"expect": "maybe"}, "expect: 'maybe' is not one of ok, mismatch"),
    ({"colour": "red"}, "colour: 'red' is not a known key"),
])
def test_bad_values_name_file_key_and_value(overrides, message):
    if overrides.get("executor.loop") == "pp":
        overrides["topology"] = "tp1_pp1"
    with pytest.raises(ScenarioError) as info:
        load_scenario("scenarios/kv_transfer.yaml", overrides)
    text = str(info.value)
    assert text.startswith("scenarios/kv_transfer.yaml: ") and message in text
    assert "\n" not in text


def test_yaml_syntax_error_names_the_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nworkload: [unclosed\n")
    with pytest.raises(ScenarioError, match=r"bad.yaml: line \d+: not valid YAML"):
        load_scenario(bad)


def test_off_stays_a_string():
    assert load_scenario("scenarios/kv_transfer.yaml").transceiver.sticky_skip == "off"


def test_every_shipped_scenario_loads():
    from trtsim.scenario.registry import load_any
    paths = sorted((pathlib.Path(__file__).parent.parent / "scenarios").glob("*.yaml"))
    assert len(paths) >= 10, f"found only {paths}"
    for path in paths:
        assert load_any(path).name, path


def cli(*args):
    return subprocess.run([sys.executable, "-m", "trtsim", *args], capture_output=True, text=True,
                          timeout=120)


def test_cli_exit_codes(tmp_path):
    out = cli("run", "scenarios/kv_transfer.yaml", "--set", "topology=tp2_pp2")
    assert out.returncode == 0 and "verdict: ok, kv verified: True" in out.stdout
    out = cli("run", "scenarios/kv_transfer.yaml", "--set", "transceiver.sticky_skip=unguarded",
              "--set", "guard=lockstep")
    assert out.returncode == 1 and "CollectiveMismatch" in out.stdout
    out = cli("run", "scenarios/kv_transfer.yaml", "--set", "model.window=abc")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    out = cli("run", "scenarios/kv_transfer.yaml", "--set", "novalue")
    assert out.returncode == 2 and "expected key=value" in out.stderr


def test_cli_json_and_census(tmp_path):
    path = tmp_path / "r.json"
    out = cli("run", "scenarios/sticky_skip_pp_deadlock.yaml", "--json", str(path), "--census")
    assert out.returncode == 0 and "reproduced" in out.stdout and "per rank-iter" in out.stdout
    data = json.loads(path.read_text())
    assert data["verdict"] == "mismatch" and data["holds"] is True
    assert data["error"]["group_kind"] == "pp"


def test_cli_topologies():
    out = cli("topologies")
    assert out.returncode == 0 and "tp4_pp2_dp_both" in out.stdout


def test_cli_bench_lists_the_benchmarks():
    out = cli("bench")
    assert out.returncode == 0 and "inproc" in out.stdout and "serving_sim" in out.stdout
    bad = cli("bench", "nope")
    assert bad.returncode == 2 and "is not one of" in bad.stderr
