"""Latent gates through every face: the CLI's --gates and --json, the scenario key, the
pytest fixture's argument."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import trtsim
from tests import gate_programs as gp
from trtsim.scenario.functional import ScenarioError, load_scenario


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "trtsim", *args], capture_output=True,
                          text=True, timeout=110, check=False)


def test_cli_run_with_gates_observe_writes_latent(tmp_path):
    out = tmp_path / "run.json"
    proc = _cli("run", "kv_transfer", "--gates", "observe", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["latent"] == [] and doc["absorbed"] == [] and doc["verdict"] == "ok"


def test_cli_refuses_an_unknown_gates_mode():
    proc = _cli("run", "kv_transfer", "--gates", "sometimes")
    assert proc.returncode == 2
    assert "--gates" in proc.stderr and "Traceback" not in proc.stderr


def test_scenario_key_gates_is_checked():
    raw = {"topology": "tp1_pp1", "workload": {"kind": "transfer"}}
    assert load_scenario(raw).gates == "off"
    assert load_scenario(dict(raw, gates="observe")).gates == "observe"
    with pytest.raises(ScenarioError, match="gates: 'maybe'"):
        load_scenario(dict(raw, gates="maybe"))


def test_run_result_prints_each_latent_gate_after_the_verdict():
    from trtsim.comm.latent_gate import LatentGate
    result = trtsim.run("kv_transfer", overrides={"gates": "observe"})
    result.latent = [LatentGate("p.py:3", "n > 0", "allreduce", (0, 1), 1,
                                {0: "n=3", 1: "n=5"}, {0: True, 1: True})]
    lines = result.summary().splitlines()
    assert lines[1].startswith("verdict: ok")
    assert lines[2] == ("latent gate: p.py:3 `n > 0` decides allreduce on ranks [0, 1] "
                        "(iteration 1): rank 0: n=3; rank 1: n=5")
    assert result.to_dict()["latent"][0]["values"] == {"0": "n=3", "1": "n=5"}


def test_fixture_passes_gates(trtsim_launch):
    results = trtsim_launch(gp.dp_zero_token, tp=2, args=([[3, 5]],), gates="observe")
    assert [g.site.rsplit(":", 1)[1] for g in results.latent] == [
        str(gp.GATE_LINES["dp_zero_token"])]


def test_latent_gate_is_exported_and_validated():
    with pytest.raises(ValueError, match="group_ranks"):
        trtsim.LatentGate("p.py:3", "n > 0", "allreduce", (1, 0), 1, {}, {})
    with pytest.raises(ValueError, match="site"):
        trtsim.LatentGate("p.py", "n > 0", "allreduce", (0, 1), 1, {}, {})


def test_scenario_flip_rewrites_the_runtime_and_restores_it():
    from trtsim.executor import py_executor
    before = {n: f.__code__ for n, f in vars(py_executor.PyExecutor).items()
              if callable(f) and hasattr(f, "__code__")}
    result = trtsim.run("executor_mtp", overrides={"gates": "flip"})
    assert result.holds and result.latent == [] and result.absorbed == []
    after = {n: f.__code__ for n, f in vars(py_executor.PyExecutor).items()
             if callable(f) and hasattr(f, "__code__")}
    assert after == before


def test_cli_explore_takes_flip_gates(tmp_path):
    out = tmp_path / "explore.json"
    proc = _cli("explore", "kv_transfer", "--flip-gates", "--examples", "1", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["found"] is False


def test_gates_in_refuses_plumbing():
    for name in ("trtsim", "trtsim.comm", "torch.distributed"):
        with pytest.raises(ValueError, match="plumbing"):
            trtsim.launch(gp.dp_zero_token, tp=2, args=([[1, 1]],), gates="flip",
                          gates_in=(name,))


def test_flip_under_torchrun_is_refused_and_observe_taken():
    from trtsim.comm.launch_config import LaunchConfig
    with pytest.raises(ValueError, match="torchrun"):
        LaunchConfig(backend="torchrun", gates="flip")
    assert LaunchConfig(backend="torchrun", gates="observe").gates == "observe"


def test_cli_run_flip_proves_the_sticky_flag_of_trtsims_own_transceiver(tmp_path):
    # DESIGN 5.3's sticky flag with the guarded skip: the stages of a PP group open their first
    # send session in different iterations (pp_handling: on_arrival) and still agree, since
    # the guarded skip never skips with PP > 1; the flag is the latent gate, its flip the hang
    out = tmp_path / "run.json"
    proc = _cli("run", "executor_pp_on_arrival_unguarded", "--set",
                "transceiver.sticky_skip=guarded", "--set", "expect=ok", "--gates", "flip",
                "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["verdict"] == "ok" and doc["absorbed"] == []
    assert [g["group_ranks"] for g in doc["latent"]] == [[0, 4], [1, 5], [2, 6], [3, 7]]
    for gate in doc["latent"]:
        assert gate["site"].startswith("trtsim/disagg/transceiver.py:")
        assert "ever_had_send_session" in gate["condition"]
        assert gate["flip"]["type"] == "CollectiveMismatch"
        assert f"flipped on rank {gate['flip_rank']}" in gate["flip"]["explanation"]
    printed = [line for line in proc.stdout.splitlines() if line.startswith("latent gate:")]
    assert len(printed) == 4 and proc.stdout.index("verdict: ok") < proc.stdout.index(printed[0])
