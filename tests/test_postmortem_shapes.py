"""Real Flight Recorder dumps of hung gloo runs, read post mortem (DESIGN 8): each shape is
reported as the live guard reports the same program (group, ranks, every member's call site,
the likely line), and its replay reproduces that report on the inproc backend."""

import os

import pytest

from tests import postmortem_shapes as shapes
from trtsim.jobs.replay_job import reproducing_seed, run_replay
from trtsim.postmortem.analysis import analyze
from trtsim.postmortem.inputs import load_job
from trtsim.postmortem.replay import build_replay, load_replay, replay_text
from trtsim.scenario.source import load_raw

pytestmark = pytest.mark.timeout(300)

SEEN = ("skip_pair", "op_mismatch", "root_mismatch", "cross_group_cycle", "early_exit")




def analysis_of(dumps, run, *files):
    folder = os.path.join(dumps, run)
    return analyze(load_job([os.path.join(folder, f) for f in files] or [folder]))


@pytest.mark.parametrize("shape", SEEN)
def test_each_dump_gives_the_live_guards_report(dumps, shape):
    found = analysis_of(dumps, shape).error
    live = shapes.live_report(shape)
    assert found is not None and live is not None
    assert type(found) is type(live)
    assert (found.group_kind, found.group_ranks, found.ranks) == \
        (live.group_kind, live.group_ranks, live.ranks)
    assert {r: c.callsite for r, c in found.calls.items()} == \
        {r: c.callsite for r, c in live.calls.items()}
    assert found.explanation == live.explanation
    if shape != "op_mismatch":      # the recorder keeps no reduce op: the summary names one field
        assert str(found) == str(live)


def test_the_skip_that_paired_silently_is_found_where_it_paired(dumps):
    err = analysis_of(dumps, "skip_pair").error
    assert err.kind == "mismatch" and "differs in purpose (rank 0: _step, rank 1: _final)" in \
        err.summary
    assert {r: c.seq for r, c in err.calls.items()} == {0: 4, 1: 4}
    # gloo completed that pairing: both entries retired, only rank 0's last call is in flight
    job = load_job([os.path.join(dumps, "skip_pair")])
    assert [h.status for h in job.histories] == ["blocked", "done"]
    assert all(c.done for h in job.histories for c in h.calls if c.record.seq == 4)


def test_a_root_is_read_from_who_received(dumps):
    err = analysis_of(dumps, "root_mismatch").error
    assert {r: c.root for r, c in err.calls.items()} == {0: 0, 1: 1}
    assert err.explanation == "the members disagree on the root (rank 0: 0, rank 1: 1)"


def test_a_p2p_hang_leaves_no_flight_recorder_entry(dumps):
    found = analysis_of(dumps, "p2p_tag_mismatch")
    assert found.error is None and found.verdict == "ok"
    assert any("no p2p call on gloo" in n for n in found.notes)
    assert shapes.live_report("p2p_tag_mismatch").explanation.endswith("p2p tag mismatch")


def test_the_json_form_has_no_frames_so_the_silent_pairing_is_invisible(dumps):
    folder = os.path.join(dumps, "skip_pair")
    found = analyze(load_job([os.path.join(folder, f"{shapes.PREFIX}{r}.json")
                              for r in (0, 1)]))
    assert found.job.form == "flight recorder json"
    assert found.error.kind == "deadlock"            # only rank 0's unanswered last call
    assert any("without Python frames" in n for n in found.notes)
    assert all(c.callsite == "<unknown>" for c in found.error.calls.values())


def test_a_folder_with_both_forms_reads_the_pickles(dumps):
    job = load_job([os.path.join(dumps, "early_exit")])
    assert job.form == "flight recorder pickle" and len(job.histories) == 2


def test_uneven_ring_buffer_truncation_is_aligned_from_what_survives(dumps):
    found = analysis_of(dumps, "skip_pair_truncated")
    job = found.job
    assert [h.dropped for h in job.histories] == [2, 1]          # 5 and 4 entries, rings of 3
    assert [h.calls[0].record.seq for h in job.histories] == [3, 2]
    assert found.error.kind == "mismatch" and found.error.summary == \
        analysis_of(dumps, "skip_pair").error.summary
    assert any("dropped its 2 oldest entries" in n for n in found.notes)
    (group,) = found.alignment.groups
    assert group.start == 3 and group.truncated == (0, 1)


@pytest.mark.parametrize("shape", SEEN + ("skip_pair_truncated",))
def test_the_replay_reproduces_the_report_on_inproc(dumps, shape, tmp_path):
    found = analysis_of(dumps, shape)
    seed, first = reproducing_seed(build_replay(found))
    assert first.reproduced and str(first.error) == str(found.error)
    path = tmp_path / "replay.yaml"
    path.write_text(replay_text(build_replay(found, seed=seed)))
    raw, name = load_raw(str(path))
    again = run_replay(load_replay(raw, name))
    assert again.reproduced and again.verdict == found.verdict and not again.holds
    assert again.replay.calls == build_replay(found).calls
