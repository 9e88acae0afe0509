"""``trtsim analyze`` on real dumps: exit statuses, the report, ``--json``, ``--group`` and
``--replay``, whose file ``trtsim run`` replays to exit 1 with the same report."""

import json
import os

import pytest

from tests.test_json_schema import check
from trtsim.app.cli import main

pytestmark = pytest.mark.timeout(300)




def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_hang_exits_1_with_the_report_and_a_consistent_job_0(dumps, capsys):
    code, out, _ = run(capsys, "analyze", os.path.join(dumps, "skip_pair"))
    assert code == 1
    assert out.splitlines()[:2] == [f"analyze: 2 ranks, flight recorder pickle, 1 group, 9 calls "
                                    f"({os.path.join(dumps, 'skip_pair')})", "verdict: mismatch"]
    assert "CollectiveMismatch: world group [0, 1]: call #4 differs in purpose" in out
    code, out, _ = run(capsys, "analyze", os.path.join(dumps, "p2p_tag_mismatch"))
    assert code == 0 and "verdict: ok" in out


def test_json_document(dumps, capsys, tmp_path):
    path = tmp_path / "a.json"
    code, _, _ = run(capsys, "analyze", os.path.join(dumps, "cross_group_cycle"), "--json", path)
    doc = json.loads(path.read_text())
    check(doc)
    assert code == 1 and doc["verdict"] == "deadlock" and doc["replay"] is None
    assert doc["error"]["ranks"] == [0, 1, 2]
    assert [h["status"] for h in doc["histories"]] == ["blocked"] * 3
    assert {g["name"]: g["ranks"] for g in doc["groups"]}["split [0, 1] (torch:1)"] == [0, 1]


def test_declared_group_members_replace_the_inferred_ones(dumps, capsys, tmp_path):
    path = tmp_path / "a.json"
    run(capsys, "analyze", os.path.join(dumps, "cross_group_cycle"), "--json", path,
        "--group", "1=0,1,2")
    doc = json.loads(path.read_text())
    assert [g["ranks"] for g in doc["groups"] if g["name"].endswith("(torch:1)")] == [[0, 1, 2]]
    (note,) = [n for n in doc["notes"] if "members taken to be" in n]
    assert note.startswith("groups '2' [1, 2], '3' [0, 2]: members taken")


@pytest.mark.parametrize("shape", ["skip_pair", "cross_group_cycle", "skip_pair_truncated"])
def test_the_replay_file_runs_to_exit_1_and_the_same_report(dumps, capsys, tmp_path, shape):
    replay, doc = tmp_path / "replay.yaml", tmp_path / "run.json"
    code, analysed, _ = run(capsys, "analyze", os.path.join(dumps, shape), "--replay", replay)
    assert code == 1 and f"replay: {replay} (" in analysed and "reproduces this report" in \
        analysed
    report = analysed[analysed.index("Collective"):analysed.index("\nreplay: ")]
    code, replayed, _ = run(capsys, "run", replay, "--json", doc)
    assert code == 1
    assert replayed.splitlines()[1].endswith("(the recorded report, reproduced)")
    # the same report; where the files say who fell behind, analyze's likely line says more
    # than the guard's (test_postmortem_skips)
    lines = report.splitlines()
    ended = replayed.rstrip().splitlines()[-len(lines):]
    assert [line for line in ended if not line.startswith("  likely: ")] == \
        [line for line in lines if not line.startswith("  likely: ")]
    assert (ended == lines) == (shape == "cross_group_cycle")
    body = json.loads(doc.read_text())
    check(body, optional=("census_rows",))
    assert body["schema"] == "trtsim/replay" and body["reproduced"] and not body["holds"]


def test_a_replay_that_holds_exits_0(dumps, capsys, tmp_path):
    replay = tmp_path / "replay.yaml"
    run(capsys, "analyze", os.path.join(dumps, "p2p_tag_mismatch"), "--replay", replay)
    code, out, _ = run(capsys, "run", replay)
    assert code == 0 and "verdict: ok (the recorded report, reproduced)" in out


def test_a_replay_runs_on_inproc_only(dumps, capsys, tmp_path):
    replay = tmp_path / "replay.yaml"
    run(capsys, "analyze", os.path.join(dumps, "early_exit"), "--replay", replay)
    code, _, err = run(capsys, "run", replay, "--backend", "gloo")
    assert code == 2 and err == f"trtsim: {replay}: backend: 'gloo': a replay runs on the " \
        "inproc backend\n"
