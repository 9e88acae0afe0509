"""A flip that gives a report is written as a replayable counterexample: launch()'s as a flip
file that ``launch(..., gates="flip", flip=FILE)`` replays, a scenario's as a scenario that
``trtsim run FILE`` replays; each replay gives the same report, on inproc and on gloo."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

import trtsim
from tests import gate_programs as gp
from tests.test_latent_gates import INCIDENTS
from trtsim.backends.counterexample import load_flip
from trtsim.comm.flip_aim import FlipAim
from trtsim.scenario.functional import ScenarioError, load_scenario


def _replayed(prog, path, **kw):
    with pytest.raises(trtsim.CollectiveError) as caught:
        trtsim.launch(prog, gates="flip", flip=path, **kw)
    return caught.value


@pytest.mark.parametrize("name", sorted(INCIDENTS))
def test_each_flip_file_replays_the_same_report(name, tmp_path):
    prog, _, kw, inputs, _, _ = INCIDENTS[name]
    results = trtsim.launch(prog, args=(inputs,), gates="flip", out_dir=str(tmp_path), **kw)
    assert results.latent
    for gate in results.latent:
        assert os.path.dirname(gate.counterexample) == str(tmp_path)
        assert f"counterexample: {gate.counterexample}" in gate.line()
        assert load_flip(gate.counterexample).rank == gate.flip_rank
        again = _replayed(prog, gate.counterexample, args=(inputs,), **kw)
        assert type(again) is type(gate.flip) and str(again) == str(gate.flip)
    assert all(g.counterexample is None for g in results.absorbed)


def test_flip_file_replays_the_same_report_on_gloo(tmp_path):
    prog, _, kw, inputs, _, _ = INCIDENTS["dp_zero_token"]
    results = trtsim.launch(prog, args=(inputs,), gates="flip", backend="gloo",
                            out_dir=str(tmp_path), **kw)
    gate = results.latent[0]
    assert yaml.safe_load(open(gate.counterexample))["backend"] == "gloo"
    again = _replayed(prog, gate.counterexample, args=(inputs,), backend="gloo", **kw)
    assert type(again) is type(gate.flip)
    assert again.explanation.startswith(f"the gate at {gate.site}")


def test_without_out_dir_a_gate_keeps_one_file_in_the_user_cache(tmp_path, monkeypatch):
    # runs that find the same gate again replace its file: nothing piles up
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    runs = [trtsim.launch(gp.dp_zero_token, tp=2, args=([[3, 5]],), gates="flip")
            for _ in range(2)]
    paths = [r.latent[0].counterexample for r in runs]
    assert paths[0] == paths[1] and os.path.isfile(paths[0])
    assert os.path.dirname(paths[0]) == str(tmp_path / "trtsim" / "flips")
    assert os.listdir(tmp_path / "trtsim" / "flips") == [os.path.basename(paths[0])]


def test_observe_writes_nothing(tmp_path):
    results = trtsim.launch(gp.dp_zero_token, tp=2, args=([[3, 5]],), gates="observe",
                            out_dir=str(tmp_path))
    assert results.latent and results.latent[0].counterexample is None
    assert os.listdir(tmp_path) == []


def test_a_flip_needs_gates_flip_and_a_flip_file(tmp_path):
    with pytest.raises(ValueError, match="gates='flip'"):
        trtsim.launch(gp.dp_zero_token, tp=2, args=([[3, 5]],), flip=str(tmp_path / "x"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: gate_flip\nflip: {site: p.py, rank: 0, evaluation: 1}\n")
    with pytest.raises(ValueError, match="flip.site"):
        trtsim.launch(gp.dp_zero_token, tp=2, args=([[3, 5]],), gates="flip", flip=str(bad))
    bad.write_text("kind: replay\n")
    with pytest.raises(ValueError, match="kind"):
        load_flip(str(bad))


def test_flip_aim_round_trips_and_matches_the_file_by_its_end():
    aim = FlipAim("tests/gate_programs.py", 27, 1, 2, 7, "tests/gate_programs.py:27", "n > 0")
    assert FlipAim.from_dict(aim.to_dict(), "flip") == aim
    assert aim.matches("/any/checkout/tests/gate_programs.py")
    assert not aim.matches("/any/checkout/tests/other_gate_programs.py")
    with pytest.raises(ValueError, match="flip.rank"):
        FlipAim.from_dict(dict(aim.to_dict(), rank="0"), "flip")


def test_scenario_flip_key_needs_gates_flip():
    raw = {"topology": "tp1_pp1", "workload": {"kind": "transfer"},
           "flip": {"site": "p.py:3", "rank": 0, "evaluation": 1}}
    with pytest.raises(ScenarioError, match="flip.*gates: flip"):
        load_scenario(raw)
    assert load_scenario(dict(raw, gates="flip")).flip.line == 3


def test_cli_scenario_counterexample_replays_the_same_report(tmp_path):
    # DESIGN 5.3's sticky flag (see test_gates_plumbing): each flip is a scenario file
    run = lambda *a: subprocess.run([sys.executable, "-m", "trtsim", "run", *a],  # noqa: E731
                                    capture_output=True, text=True, timeout=300, check=False)
    proc = run("executor_pp_on_arrival_unguarded", "--set", "transceiver.sticky_skip=guarded",
               "--set", "expect=ok", "--gates", "flip", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("latent gate:")]
    files = sorted(str(p) for p in tmp_path.iterdir())
    assert len(files) == len(lines) == 4
    assert all(ln.endswith(f"counterexample: {f}") for ln, f in zip(lines, files))
    report = proc.stdout.split("flipped on rank 0: ", 1)[1].split("; counterexample:")[0]
    replay = run(files[0])
    assert replay.returncode == 1, replay.stderr
    assert "verdict: mismatch" in replay.stdout and report in replay.stdout
    assert "flipped on rank 0" in replay.stdout


def test_cli_run_out_must_be_a_folder(tmp_path):
    taken = tmp_path / "file"
    taken.write_text("")
    proc = subprocess.run([sys.executable, "-m", "trtsim", "run", "kv_transfer", "--gates",
                           "flip", "--out", str(taken)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 2 and "--out" in proc.stderr and "Traceback" not in proc.stderr
