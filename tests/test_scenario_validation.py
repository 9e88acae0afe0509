"""Scenario input: unknown keys, wrong types, impossible values are one-line errors naming
file, key and value (the command's exit statuses: tests/test_cli.py)."""

import pathlib

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
    ({"timeout": -1}, "timeout: timeout=-1 must be a finite number of seconds > 0"),
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
