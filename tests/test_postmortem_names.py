"""Which files are a job's dumps, and how many ranks the job has: any name prefix, an optional
extension, the rank the digits before it; the job's size from the dumps' group configs, so a
lone rank-0 dump of a 2-rank job is missing rank 1 (not a 1-rank job)."""

import os
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import fr_synth
from tests import postmortem_shapes as shapes
from trtsim.postmortem.history import BadDump
from trtsim.postmortem.inputs import load_job

pytestmark = pytest.mark.timeout(300)


def refused(paths) -> str:
    with pytest.raises(BadDump) as info:
        load_job([str(p) for p in paths])
    return str(info.value)


@pytest.mark.parametrize("prefix, ext", [("rank_", ".pkl"), ("nccl_trace_rank_", ""),
                                         ("dump-", ".pickle"), ("", ".bin"),
                                         (shapes.PREFIX, "")])
def test_a_dump_name_is_any_prefix_the_rank_and_an_optional_extension(tmp_path, prefix, ext):
    fr_synth.skip_job(tmp_path / "by_name", prefix=prefix)
    for r in (0, 1):
        os.rename(tmp_path / "by_name" / f"{prefix}{r}", tmp_path / "by_name" / f"{prefix}{r}{ext}")
    job = load_job([str(tmp_path / "by_name")])
    assert [h.rank for h in job.histories] == [0, 1]
    assert [os.path.basename(h.source) for h in job.histories] == \
        [f"{prefix}0{ext}", f"{prefix}1{ext}"]


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prefix=st.text(st.characters(whitelist_categories=("Ll", "Lu"), whitelist_characters="_-."),
                      max_size=12).filter(lambda p: not p.startswith(".")),
       ext=st.sampled_from(["", ".pkl", ".pt", ".dump", ".json"]), rank=st.integers(0, 3))
def test_the_rank_is_the_digits_before_the_extension(tmp_path_factory, prefix, ext, rank):
    folder = tmp_path_factory.mktemp("names")
    paths = [fr_synth.write(folder, r, fr_synth.dump([fr_synth.entry(1)], 4),
                            f"{prefix}{r}{ext}") for r in range(4)]
    assert load_job([paths[rank]] + [p for p in paths if p != paths[rank]]).histories[rank] \
        .source == paths[rank]


def test_a_folder_skips_what_no_dump_is(tmp_path):
    fr_synth.consistent_job(tmp_path)
    for name in ("replay2.yaml", "notes1.txt", "run3.log"):
        (tmp_path / name).write_text("not a dump\n")
    assert len(load_job([str(tmp_path)]).histories) == 2


def test_a_lone_rank_0_dump_of_a_2_rank_job_is_missing_rank_1(tmp_path):
    paths = fr_synth.consistent_job(tmp_path, world=2)
    assert refused([paths[0]]) == f"{paths[0]}: no file for rank 1 of this job (ranks 0..1)"
    assert refused([paths[1]]) == f"{paths[1]}: no file for rank 0 of this job (ranks 0..1)"


def test_a_real_lone_gloo_dump_says_its_job_had_two_ranks(dumps, tmp_path):
    """gloo's pg_config files the group under "" with its ranks: enough for the size."""
    shutil.copy(os.path.join(dumps, "early_exit", f"{shapes.PREFIX}0"), tmp_path)
    assert "no file for rank 1 of this job (ranks 0..1)" in refused([tmp_path])


def test_many_missing_ranks_are_counted_not_listed(tmp_path):
    path = fr_synth.write(tmp_path, 0, fr_synth.dump([fr_synth.entry(1)], 4096))
    text = refused([path])
    assert text.endswith("no file for ranks 1, 2, 3, 4, 5, 6, 7, 8 and 4087 more of this job "
                         "(ranks 0..4095)")


def test_the_dumps_of_a_job_share_its_group_lists(tmp_path):
    """Every rank's pg_config repeats the job's groups: read once and shared, n dumps of an
    n-rank job hold n rank numbers, not n*n (10,000 ranks: 3.9 GB before)."""
    from trtsim.postmortem.dumps import read_dump
    paths = fr_synth.consistent_job(tmp_path, world=3)
    cache: dict = {}
    dumps = [read_dump(p, r, cache) for r, p in enumerate(paths)]
    assert {d.world for d in dumps} == {3}
    assert all(d.pg_ranks[0][1] is dumps[0].pg_ranks[0][1] == (0, 1, 2) for d in dumps)
