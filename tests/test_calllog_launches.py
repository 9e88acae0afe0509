"""One launch per read: call logs carry their launch (id, start), ``analyze`` reads one
launch of a folder that several wrote into, names what it skipped and the ranks a launch is
missing, and sizes nothing by a number in a log before checking it."""

import json
import os
import subprocess
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import trtsim
from trtsim.app.cli import main
from trtsim.calls.call_log_format import CALL_LOG_FORMAT, CALL_LOG_VERSION, FIELDS, encode_call, log_name
from trtsim.comm.launch_stamp import LaunchStamp
from trtsim.calls.records import CallRecord
from trtsim.postmortem.calllog import choose_launch
from trtsim.postmortem.history import BadDump
from trtsim.postmortem.inputs import load_job

pytestmark = pytest.mark.timeout(240)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
T0 = 1_790_000_000 * 10**9          # a start time, ns


def log_doc(launch: str, started: int, rank: int, world: int, status="done", calls=1,
            change: dict | None = None) -> dict:
    """A call log as a rank of a plain ``world``-rank launch writes it: ``calls`` world
    all-gathers, the last one blocked in when ``status`` is blocked."""
    rows = [encode_call(CallRecord("allgather", s, "x", 0, "job.py:3 in prog", "object", rank,
                                   rank, "", "world", tuple(range(world))),
                        not (status == "blocked" and s == calls), started + s)
            for s in range(1, calls + 1)]
    doc = {"format": CALL_LOG_FORMAT, "version": CALL_LOG_VERSION, "rank": rank,
           "name": "", "world_size": world, "layout": [["", "", world, 1, 1, False]],
           "launch": launch, "started_ns": started, "written_on": "exit", "status": status,
           "iteration": 0, "pending_sends": [], "failure": "", "traceback": "", "dropped": 0,
           "fields": list(FIELDS), "calls": rows}
    doc.update(change or {})
    return doc


def write(folder, doc) -> str:
    path = os.path.join(folder, log_name(doc["rank"], doc["launch"]))
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def analyze_cli(*args, capsys):
    code = main(["analyze", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_newest_complete_launch_is_read_and_the_others_named(tmp_path, capsys):
    for r in range(2):
        write(tmp_path, log_doc("old", T0, r, 2))
    write(tmp_path, log_doc("new", T0 + 10**9, 0, 2, status="blocked", calls=2))
    code, out, _ = analyze_cli(tmp_path, capsys=capsys)
    assert code == 0 and "verdict: ok" in out, out
    assert "note: skipped launch new (started 2026-" in out
    assert "logs of 1 of its 2 ranks): analyze it with --launch new" in out


def test_a_launch_with_a_missing_rank_is_a_partial_report_exit_1(tmp_path, capsys):
    for r in range(2):
        write(tmp_path, log_doc("old", T0, r, 2))
    for r in (0, 2):
        write(tmp_path, log_doc("new", T0 + 10**9, r, 3, status="blocked", calls=2))
    code, out, err = analyze_cli(tmp_path, "--launch", "new", capsys=capsys)
    assert code == 1 and not err, err
    assert "analyze: 2 ranks" in out
    assert "note: partial: no call log of rank 1 of launch new (3 ranks); this report is " \
           "what ranks 0, 2 show; rank 0 waits in allgather #2" in out, out
    assert "note: skipped launch old" in out and "consistent" not in out


def test_a_launch_asked_for_that_is_not_there(tmp_path, capsys):
    write(tmp_path, log_doc("a1", T0, 0, 1))
    code, _, err = analyze_cli(tmp_path, "--launch", "zz", capsys=capsys)
    assert code == 2 and err.splitlines() == [
        f"trtsim: {tmp_path}: no call log of launch 'zz' (launches there: a1)"]


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(launches=st.lists(st.tuples(st.integers(1, 3), st.integers(0, 50),
                                   st.sets(st.integers(0, 2), min_size=1)),
                         min_size=1, max_size=4))
def test_which_launch_is_read(tmp_path, launches):
    """(world size, start, ranks with a log) per launch -> the newest complete one, else
    the newest; every other launch is named, the missing ranks of the one read too."""
    folder = tempfile.mkdtemp(dir=tmp_path)                 # one folder per example
    paths: dict[int, list[str]] = {}
    shapes = {}
    for i, (world, start, ranks) in enumerate(launches):
        ranks = {r for r in ranks if r < world} or {0}
        shapes[f"l{i}"] = (world, T0 + start * 10**9 + i, ranks)
        for r in ranks:
            paths.setdefault(r, []).append(write(folder, log_doc(f"l{i}", shapes[f"l{i}"][1],
                                                                 r, world)))
    complete = [k for k, (w, _, ranks) in shapes.items() if len(ranks) == w]
    expect = max(complete or shapes, key=lambda k: shapes[k][1])
    got = choose_launch(paths)
    world, _, ranks = shapes[expect]
    assert [h.rank for h in got.histories] == sorted(ranks)
    assert got.missing == tuple(r for r in range(world) if r not in ranks)
    skipped = [n for n in got.notes if n.startswith("skipped launch ")]
    assert sorted(n.split()[2] for n in skipped) == sorted(set(shapes) - {expect})


def test_two_logs_of_one_rank_of_one_launch_are_bad_input(tmp_path):
    write(tmp_path, log_doc("a1", T0, 0, 1))
    other = tmp_path / "trtsim_calls_rank0.json"            # the old name, same launch
    other.write_text(json.dumps(log_doc("a1", T0, 0, 1)))
    with pytest.raises(BadDump, match="a second call log for rank 0 of launch a1"):
        load_job([str(tmp_path)])


@pytest.mark.parametrize("change, why", [
    (dict(world_size=10**12), "rank 0 of world_size 1000000000000: a world is 1 to 16,384"),
    (dict(rank=10**11, world_size=10**12), "rank 100000000000 of world_size"),
    (dict(launch="../x"), "launch id '../x'"),
    (dict(started_ns=-1), "launch start -1"),
    (dict(launch=None), "launch: None is not str"),
    (dict(name=[[[]]] * 10**5), "name: a list is not str"),
])
def test_numbers_in_a_log_are_checked_before_they_size_anything(tmp_path, change, why):
    # Run under a memory limit: set(range(10**12)) or a list of that many would not fit.
    path = tmp_path / "trtsim_calls_rank0.json"
    path.write_text(json.dumps(log_doc("a1", T0, 0, 1, change=change)))
    code = ("import resource, sys\nresource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
            "from trtsim.app.cli import main\nsys.exit(main(['analyze', sys.argv[1]]))\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 2, out.stderr[-2000:]
    [line] = out.stderr.splitlines()
    assert line.startswith(f"trtsim: {path}: ") and why in line, line


def test_a_fifo_or_an_oversized_file_is_refused_unread(tmp_path):
    fifo = tmp_path / "fifo" / "trtsim_calls_rank0.json"
    fifo.parent.mkdir()
    os.mkfifo(fifo)                                     # reading it would wait for a writer
    with pytest.raises(BadDump, match="not a regular file"):
        load_job([str(fifo)])
    big = tmp_path / "big" / "trtsim_calls_rank0.json"
    big.parent.mkdir()
    with open(big, "wb") as f:
        f.truncate(65 * 2**20)                          # sparse: nothing is written
    with pytest.raises(BadDump, match="more than a call log's limit"):
        load_job([str(big)])


def test_an_unwritable_log_dir_is_refused_before_any_rank_starts(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(ValueError, match=r"log_dir='.*a_file/logs': call logs cannot be "
                                         r"written there \(Not a directory\)"):
        trtsim.launch(_never_runs, tp=2, backend="gloo", timeout=30,
                      log_dir=str(blocker / "logs"))


def _never_runs(dist):
    raise AssertionError("a rank started")


def test_a_fresh_stamp_is_a_valid_file_name_part():
    stamp = LaunchStamp.new()
    assert LaunchStamp(stamp.id, stamp.started_ns) == stamp
    assert "/" not in stamp.id and "_" not in stamp.id
