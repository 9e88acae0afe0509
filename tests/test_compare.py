"""trtsim compare: Before / After / Δ of every metric, as a performance PR shows it."""

import json
import subprocess
import sys

import pytest

from trtsim.app.compare import Comparison, compare


def test_delta_and_table():
    c = Comparison({"output_throughput": 100.0, "mean_tpot_ms": 10.0, "completed": 4},
                   {"output_throughput": 125.0, "mean_tpot_ms": 8.0, "completed": 4})
    assert c.delta_pct == pytest.approx({"output_throughput": 25.0, "mean_tpot_ms": -20.0,
                                         "completed": 0.0})
    lines = c.table().splitlines()
    assert lines[0].split() == ["metric", "Before", "After", "Δ"]
    assert any(line.split()[0] == "output_throughput" and line.split()[-1] == "+25.0%"
               for line in lines)


def test_compare_functional_scenarios_with_two_override_sets():
    c = compare("scenarios/executor_ctx_adp4_gen_tp8.yaml", None,
                {"workload.num_requests": 8}, {"workload.num_requests": 8,
                                               "transceiver.sticky_skip": "guarded"})
    assert c.before["completed"] == c.after["completed"] == 8
    assert c.after["skipped_checks"] > c.before["skipped_checks"] == 0


def test_cli_compare_json(tmp_path):
    out_json = tmp_path / "cmp.json"
    cmd = [sys.executable, "-m", "trtsim", "compare", "scenarios/incident_sticky_skip.yaml",
           "--set-a", "benchmark.multi_round=1", "--set-b", "benchmark.multi_round=1",
           "--set-b", "transceiver.sticky_skip=guarded", "--json", str(out_json)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "Before" in out.stdout and "output_throughput" in out.stdout
    data = json.loads(out_json.read_text())
    assert set(data) == {"schema", "schema_version", "trtsim_version", "before", "after",
                         "delta_pct"}
    assert data["schema"] == "trtsim/compare"
    assert data["delta_pct"]["output_throughput"] > 0
    missing = subprocess.run([sys.executable, "-m", "trtsim", "compare",
                              "scenarios/incident_sticky_skip.yaml"], capture_output=True,
                             text=True, timeout=60)
    assert missing.returncode == 2 and "--set-a/--set-b" in missing.stderr
