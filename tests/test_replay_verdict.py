"""Whether a replay reproduced its report is decided from typed fields (``ReportKey``: the
report's type, group, ranks and each rank's call), never from the rendered text; replay
files written before the key (version 2, kept here as written then) still read and judge."""

import os
from dataclasses import replace

import pytest
from hypothesis import given, strategies as st

from trtsim.jobs.replay_job import reproducing_seed, run_replay
from trtsim.postmortem.history import BadDump
from trtsim.postmortem.replay import load_replay, replay_text
from trtsim.postmortem.report_key import NONE, ReportKey
from trtsim.scenario.source import load_raw

pytestmark = pytest.mark.timeout(120)
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "replays")
OLD = ("replay_v2_skip.yaml", "replay_v2_cross_group_cycle.yaml")


def old(name: str):
    raw, source = load_raw(os.path.join(DATA, name))
    return load_replay(raw, source)


@pytest.mark.parametrize("name", OLD)
def test_a_replay_written_before_the_key_still_reads_and_reproduces(name):
    replay = old(name)
    assert replay.expect is None and replay.expect_report
    seed, result = reproducing_seed(replay)
    assert result.reproduced and not result.holds, result.summary()


@pytest.mark.parametrize("name", OLD)
def test_the_key_is_written_read_back_and_decides(name, tmp_path):
    _, result = reproducing_seed(old(name))
    key = ReportKey.of(result.error)
    assert key.type == type(result.error).__name__ and key.calls and key != NONE
    path = tmp_path / "replay.yaml"
    path.write_text(replay_text(replace(result.replay, expect=key)))
    raw, source = load_raw(str(path))
    assert raw["version"] == 3
    again = load_replay(raw, source)
    assert again.expect == key
    # Text is no part of the verdict: another wording still reproduces ...
    reworded = replace(again, expect_report="the same report, worded otherwise")
    assert run_replay(reworded, result.seed).reproduced
    # ... and the same text with another call (a sequence one off) does not.
    rank, op, label, seq, it = key.calls[0]
    other = replace(key, calls=((rank, op, label, seq + 1, it),) + key.calls[1:])
    assert not run_replay(replace(again, expect=other), result.seed).reproduced
    assert not run_replay(replace(again, expect=NONE), result.seed).reproduced


def test_a_bad_key_is_one_line_naming_the_field(tmp_path):
    raw, source = load_raw(os.path.join(DATA, OLD[0]))
    with pytest.raises(BadDump, match="expect: .*not \\[type"):
        load_replay(dict(raw, version=3, expect=["CollectiveMismatch", "pp"]), source)
    with pytest.raises(BadDump, match="expect: missing"):
        load_replay(dict(raw, version=3), source)


_ranks = st.lists(st.integers(0, 64), max_size=6)


@given(kind=st.sampled_from(["", "CollectiveMismatch", "CollectiveDeadlock", "RankFailed"]),
       group=_ranks, ranks=_ranks, rank=st.none() | st.integers(0, 64),
       calls=st.lists(st.tuples(st.integers(0, 64), st.sampled_from(["allgather", "recv_tensor"]),
                                st.none() | st.text(max_size=5), st.integers(1, 99),
                                st.integers(0, 9)), max_size=4))
def test_a_key_survives_its_json(kind, group, ranks, rank, calls):
    key = ReportKey(kind, "tp", tuple(group), tuple(ranks), rank, tuple(calls))
    assert ReportKey.from_json(key.to_json()) == key
    assert key.group_ranks == tuple(sorted(group))       # the order a report gave is no part
