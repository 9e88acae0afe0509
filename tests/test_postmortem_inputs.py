"""Input a post-mortem cannot use is refused with one line naming the file and why: empty,
malformed, foreign or mixed-version dumps, call logs that are not, a job with a rank missing.
``trtsim analyze`` then exits 2 with that line and no traceback."""

import collections
import copy
import json
import os
import pickle
import shutil
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests import postmortem_shapes as shapes
from trtsim.postmortem.analysis import analyze
from trtsim.postmortem.history import BadDump
from trtsim.postmortem.inputs import load_job
from trtsim.scenario.schema import ScenarioError

pytestmark = pytest.mark.timeout(300)
PREFIX = shapes.PREFIX
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))






def job_copy(dumps, tmp_path, run="early_exit", json_too=False):
    out = tmp_path / "job"
    out.mkdir()
    for name in os.listdir(os.path.join(dumps, run)):
        if json_too or not name.endswith(".json"):
            shutil.copy(os.path.join(dumps, run, name), out / name)
    return out


def log_of(folder, rank: int):
    """Rank ``rank``'s call log in ``folder`` (its name carries the launch's id)."""
    import pathlib
    [path] = pathlib.Path(folder).glob(f"trtsim_calls_*rank{rank}.json")
    return path


def refused(paths) -> str:
    with pytest.raises(BadDump) as info:
        load_job([str(p) for p in paths])
    text = str(info.value)
    assert "\n" not in text
    return text


def rewrite(path, change):
    with open(path, "rb") as f:
        doc = pickle.load(f)
    change(doc)
    with open(path, "wb") as f:
        pickle.dump(doc, f, protocol=2)


@pytest.mark.parametrize("content, why", [
    (b"", "empty file"),
    (b"\x80\x02}q\x00(X\x07\x00", "not a readable Flight Recorder pickle"),
    (b"garbage bytes", "neither a pickle nor JSON"),
    (b"{not json", "not valid JSON"),
    (pickle.dumps(["a", "list"], protocol=2), "not a mapping"),
    (pickle.dumps({"version": "3.0", "entries": []}, protocol=2), "trtsim reads 2.x"),
    (pickle.dumps({"version": "2.10", "entries": [{"retired": True, "profiling_name": "gloo:x",
                                                    "process_group": ("0", "default_pg")}]},
                  protocol=2), "entry 0 has no 'collective_seq_id'"),
    (pickle.dumps(collections.OrderedDict(version="2.10")), "a dump holds no classes"),
])
def test_a_file_that_is_no_dump_is_refused_in_one_line(dumps, tmp_path, content, why):
    folder = job_copy(dumps, tmp_path)
    (folder / f"{PREFIX}1").write_bytes(content)
    text = refused([folder])
    assert text.startswith(str(folder / f"{PREFIX}1") + ": ") and why in text


def test_mixed_versions_are_refused(dumps, tmp_path):
    folder = job_copy(dumps, tmp_path)
    rewrite(folder / f"{PREFIX}1", lambda d: d.update(version="2.9"))
    assert "format version 2.9, but" in refused([folder])


def test_a_job_needs_every_rank_and_one_name_prefix(dumps, tmp_path):
    folder = job_copy(dumps, tmp_path, "cross_group_cycle")
    os.remove(folder / f"{PREFIX}1")
    assert "no file for rank 1 of this job" in refused([folder])
    shutil.copy(folder / f"{PREFIX}0", folder / "other_trace_1")
    assert "name prefix differs" in refused([folder])


def test_dumps_without_entries_are_refused(dumps, tmp_path):
    folder = job_copy(dumps, tmp_path)
    for r in (0, 1):
        rewrite(folder / f"{PREFIX}{r}", lambda d: d.update(entries=[]))
    assert "no dump holds an entry" in refused([folder])


def test_paths_that_hold_nothing_to_read(dumps, tmp_path):
    assert "no such file" in refused([tmp_path / "nowhere"])
    (tmp_path / "empty").mkdir()
    assert "no Flight Recorder dump or trtsim call log" in refused([tmp_path / "empty"])
    (tmp_path / "notes.txt").write_text("x")
    assert "does not end in a rank" in refused([tmp_path / "notes.txt"])


def test_files_being_written_are_not_read(runs, tmp_path):
    folder = tmp_path / "logs"
    shutil.copytree(os.path.join(runs, "early_exit"), folder)
    (folder / "trtsim_calls_rank0.json.tmp123.456").write_text("{")   # a writer killed mid-way
    assert len(load_job([str(folder)]).histories) == 2


def test_call_logs_and_dumps_do_not_mix(dumps, runs, tmp_path):
    folder = job_copy(dumps, tmp_path)
    shutil.copy(log_of(os.path.join(runs, "early_exit"), 0), folder)
    assert "mixed" in refused([folder])


@pytest.mark.parametrize("change, why", [
    (lambda d: d.update(format="other"), "not a trtsim call log"),
    (lambda d: d.update(version=99), "call log version 99"),
    (lambda d: d.pop("status"), "status: None is not str"),
    (lambda d: d.update(status="asleep"), "is not one a call log writes"),
    (lambda d: d["calls"][0].__setitem__(1, "one"), "call 0: seq 'one' is not int"),
    (lambda d: d["calls"][0].pop(), "values for 21 fields"),
    (lambda d: d.update(rank=1), "it is rank 1's log, named rank 0's"),
])
def test_a_call_log_that_is_not_one_is_refused(runs, tmp_path, change, why):
    folder = tmp_path / "logs"
    shutil.copytree(os.path.join(runs, "early_exit"), folder)
    path = log_of(folder, 0)
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    text = refused([folder])
    assert text.startswith(str(path)) and why in text


def _mutations():
    junk = st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=3), st.booleans(),
                     st.lists(st.integers(), max_size=2),
                     st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))
    return st.lists(st.tuples(st.integers(0, 10_000), st.booleans(), junk), min_size=1,
                    max_size=4)


def _mutate(doc, picks):
    """Replace or delete values at positions chosen in the nested dump."""
    for where, delete, value in picks:
        places = []

        def walk(node):
            if isinstance(node, dict):
                for k in list(node):
                    places.append((node, k))
                    walk(node[k])
            elif isinstance(node, list):
                for i in range(len(node)):
                    places.append((node, i))
                    walk(node[i])
        walk(doc)
        if not places:
            return
        node, key = places[where % len(places)]
        if delete and isinstance(node, dict):
            del node[key]
        else:
            node[key] = value


@settings(max_examples=60, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(picks=_mutations())
def test_a_damaged_dump_is_read_or_refused_never_a_crash(dumps, tmp_path, picks):
    with open(os.path.join(dumps, "skip_pair", f"{PREFIX}0"), "rb") as f:
        original = pickle.load(f)
    doc = copy.deepcopy(original)
    _mutate(doc, picks)
    folder = tmp_path / "fuzz"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    shutil.copy(os.path.join(dumps, "skip_pair", f"{PREFIX}1"), folder)
    with open(folder / f"{PREFIX}0", "wb") as f:
        pickle.dump(doc, f, protocol=2)
    try:
        analyze(load_job([str(folder)]))
    except BadDump as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(folder))


def cli(*args):
    return subprocess.run([sys.executable, "-m", "trtsim", "analyze", *map(str, args)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_the_command_exits_2_with_one_line(dumps, tmp_path):
    folder = job_copy(dumps, tmp_path)
    (folder / f"{PREFIX}1").write_bytes(b"")
    out = cli(folder)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == f"trtsim: {folder / (PREFIX + '1')}: empty file\n"
    out = cli(tmp_path / "job" / f"{PREFIX}0", "--group", "1=x")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith("trtsim: --group '1=x': expected NAME=RANKS")


@settings(max_examples=40, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(picks=_mutations())
@example(picks=[(1510, False, None)])    # a receive's peer set to None: the wait-for crashed
def test_a_damaged_call_log_is_read_or_refused_never_a_crash(runs, tmp_path, picks):
    folder = tmp_path / "fuzz"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(os.path.join(runs, "p2p_tag_mismatch"), folder)
    path = log_of(folder, 1)
    doc = json.loads(path.read_text())
    _mutate(doc, picks)
    path.write_text(json.dumps(doc))
    try:
        analyze(load_job([str(folder)]))
    except BadDump as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(folder))


@settings(max_examples=40, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(picks=_mutations())
def test_a_damaged_replay_is_run_or_refused_never_a_crash(dumps, picks):
    from trtsim.jobs.replay_job import run_replay
    from trtsim.postmortem.replay import build_replay, load_replay, replay_text
    import yaml
    text = replay_text(build_replay(analyze(load_job([os.path.join(dumps, "early_exit")]))))
    raw = yaml.safe_load(text)
    _mutate(raw, picks)
    try:
        replay = load_replay(raw, "r.yaml")
    except BadDump as exc:
        assert "\n" not in str(exc) and str(exc).startswith("r.yaml: ")
        return
    try:
        run_replay(replay)      # a report (a rank that cannot issue its call fails) or none
    except ScenarioError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("r.yaml: ")
