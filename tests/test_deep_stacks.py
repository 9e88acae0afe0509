"""Any call depth and any group size on every backend: a slot of the process backend's ledger
holds a record of a 60-frame purpose key and a world of 16,384 ranks (packed, never
truncated), and the same deep program gives the same verdict on inproc, gloo and torchrun."""

import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, strategies as st

import trtsim
from trtsim.checks import MAX_RANKS
from trtsim.guard.rules import differences
from trtsim.backends.process.ledger import Ledger
from trtsim.backends.process.record_codec import RecordCodec, match_hash, ranks_digest
from tests import deep_programs as P

pytestmark = pytest.mark.timeout(240)

DEEP = " < ".join(f"pkg.module.Coordinator.level_{i:02d}_with_a_long_name" for i in range(60))


def _record(**kw) -> trtsim.CallRecord:
    base = dict(op="allgather", seq=1, label=None, iteration=0, callsite="x.py:1 in f",
                signature="object", rank=0, group_kind="world", group_ranks=(0, 1),
                purpose=DEEP)
    return trtsim.CallRecord(**{**base, **kw})


_ranks = st.one_of(
    st.builds(lambda n: tuple(range(n)), st.integers(2, MAX_RANKS)),
    st.builds(lambda a, n, s: tuple(range(a, a + n * s, s)), st.integers(0, 100),
              st.integers(2, 2000), st.integers(1, 8)),
    st.lists(st.integers(0, MAX_RANKS - 1), min_size=2, max_size=600, unique=True)
    .map(lambda xs: tuple(sorted(xs))))


@given(ranks=_ranks, depth=st.integers(0, 120), label=st.none() | st.text(max_size=600))
def test_any_record_fits_a_slot_and_reads_back_exactly(ranks, depth, label):
    purpose = " < ".join(f"mod.Class.function_{i}" for i in range(depth))
    rec = _record(group_ranks=ranks, purpose=purpose, label=label)
    data, digest = RecordCodec().encode(rec)
    assert digest == match_hash(rec)
    assert RecordCodec.decode(data, 1, 0, 0.0, like=rec) == rec
    # the launcher, which has no record of its own, learns long irregular groups by digest
    known = {ranks_digest(ranks): ranks}
    assert RecordCodec.decode(data, 1, 0, 0.0, known=known).group_ranks == ranks


@given(at=st.integers(0, 59))
def test_purposes_that_differ_anywhere_still_differ_after_packing(at):
    names = DEEP.split(" < ")
    other = _record(purpose=" < ".join(names[:at] + ["elsewhere"] + names[at + 1:]))
    data, _ = RecordCodec().encode(other)
    mine = _record()
    seen = RecordCodec.decode(data, 1, 0, 0.0, like=mine)
    assert differences(mine, seen) == ("purpose",)
    assert seen.purpose != mine.purpose


def test_a_huge_world_posts_and_reads_back_through_the_ledger():
    ledger = Ledger.create(2)
    try:
        rec = _record(group_ranks=tuple(range(MAX_RANKS)))
        assert ledger.post(0, rec) == match_hash(rec)
        assert ledger.read_call(0, rec) == rec
        assert ledger.snapshot([_Place()] * 2)[0].call.group_ranks == rec.group_ranks
    finally:
        ledger.close()


class _Place:
    name = "rank"


@pytest.mark.parametrize("backend", ["inproc", "gloo"])
def test_a_60_frame_deep_program_runs_and_its_skip_is_reported(backend):
    results = trtsim.launch(P.deep_gathers, tp=2, pp=2, backend=backend, timeout=60)
    assert results[0] == [[(0, s), (2, s)] for s in range(3)]
    with pytest.raises(trtsim.CollectiveMismatch) as info:
        trtsim.launch(P.deep_skip, tp=2, pp=2, backend=backend, timeout=60)
    err = info.value
    assert err.group_ranks == (0, 2) and err.ranks == (0, 2)
    assert all("deep_programs.py" in c.callsite for c in err.calls.values())
    assert all(len(c.purpose.split(" < ")) >= 60 for c in err.calls.values())


JOB = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {root!r})
    import trtsim
    from tests import deep_programs

    if __name__ == "__main__":
        try:
            trtsim.launch(getattr(deep_programs, sys.argv[1]), tp=2, pp=2, backend="gloo",
                          timeout=60)
            os.write(1, f"RANK {{os.environ['RANK']}} OK\\n".encode())   # one write a line
        except trtsim.CollectiveError as err:
            os.write(1, f"RANK {{os.environ['RANK']}} {{type(err).__name__}} {{err.ranks}}\\n"
                     .encode())
            sys.exit(1)
""")


@pytest.mark.parametrize("program", ["deep_gathers", "deep_skip"])
def test_the_deep_program_under_torchrun(tmp_path, program):
    job = tmp_path / "job.py"
    job.write_text(JOB.format(root=os.getcwd()))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
           "4", str(job), program]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=200, cwd=tmp_path)
    if program == "deep_gathers":
        assert out.returncode == 0, out.stderr[-3000:]
        assert out.stdout.count(" OK") == 4
    else:
        assert out.returncode != 0
        assert "CollectiveMismatch (0, 2)" in out.stdout, out.stdout + out.stderr[-3000:]


def test_an_irregular_long_group_is_announced_once_and_resolved_by_the_launcher():
    owner = Ledger.create(2)
    heard = []
    rank = Ledger.attach(owner.name, 2, announce=lambda d, ranks: heard.append((d, ranks)))
    try:
        group = tuple(sorted({0, 1, *range(5, 200, 3), 301}))
        rec = _record(group_ranks=group, comm="torch:7", group_kind="group")
        for seq in (1, 2):
            rank.post(0, rec._replace(seq=seq))
        assert heard == [(ranks_digest(group), group)]
        assert owner.snapshot([_Place()] * 2)[0].call is None     # not known yet: no verdict
        owner.learn_group(*heard[0])
        seen = owner.snapshot([_Place()] * 2)[0].call
        assert (seen.group_ranks, seen.seq, seen.comm) == (group, 2, "torch:7")
    finally:
        rank.close()
        owner.close()
