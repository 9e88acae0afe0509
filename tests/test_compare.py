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


def test_bands_pair_like_prices_and_show_in_the_table():
    """Before and after priced on the same measured machine: the change at low prices pairs
    the two low-price runs; the band is the spread of the change over the quantiles."""
    by = lambda x: {"low": {"tput": x[0]}, "central": {"tput": x[1]}, "high": {"tput": x[2]}}  # noqa: E731
    c = Comparison({"tput": 100.0}, {"tput": 110.0}, before_by=by((120.0, 100.0, 80.0)),
                   after_by=by((121.0, 110.0, 100.0)))
    band = c.band
    assert band["before"]["tput"] == (80.0, 120.0) and band["after"]["tput"] == (100.0, 121.0)
    lo, hi = band["delta_pct"]["tput"]
    assert lo == pytest.approx(100 * 1 / 120) and hi == pytest.approx(25.0)
    table = c.table()
    assert "[+0.8%, +25.0%]" in table and "low and high end" in table
    assert c.to_dict()["band"]["delta_pct"]["tput"] == [pytest.approx(lo), pytest.approx(hi)]
    assert Comparison({"tput": 1.0}, {"tput": 2.0}).band == {}


def test_compare_functional_scenarios_with_two_override_sets():
    c = compare("scenarios/executor_ctx_adp4_gen_tp8.yaml", None,
                {"workload.num_requests": 8}, {"workload.num_requests": 8,
                                               "transceiver.sticky_skip": "guarded"})
    assert c.before["completed"] == c.after["completed"] == 8
    assert c.after["skipped_checks"] > c.before["skipped_checks"] == 0


def test_cli_compare_json(tmp_path):
    out_json = tmp_path / "cmp.json"
    cmd = [sys.executable, "-m", "trtsim", "compare", "scenarios/incident_sticky_skip.yaml",
           "--set-b", "transceiver.sticky_skip=guarded", "--json", str(out_json)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "Before" in out.stdout and "output_throughput" in out.stdout
    data = json.loads(out_json.read_text())
    assert set(data) == {"schema", "schema_version", "trtsim_version", "before", "after",
                         "delta_pct", "band", "step_terms"}
    gen = next(t for t in data["step_terms"] if t["role"] == "gen")
    assert gen["terms_s"]["wait removed"] > gen["terms_s"]["latency removed"] > 0
    assert "wait removed" in out.stdout
    assert data["schema"] == "trtsim/compare"
    assert data["delta_pct"]["output_throughput"] > 0
    lo, hi = data["band"]["delta_pct"]["output_throughput"]
    assert 0 < lo <= data["delta_pct"]["output_throughput"] <= hi
    assert "Δ band" in out.stdout
    missing = subprocess.run([sys.executable, "-m", "trtsim", "compare",
                              "scenarios/incident_sticky_skip.yaml"], capture_output=True,
                             text=True, timeout=60)
    assert missing.returncode == 2 and "--set-a/--set-b" in missing.stderr
