"""One guard, backends that agree: generated rank programs on inproc and gloo (and a few under
torchrun) must end in the same verdict: kind, group and culprit ranks, and, when they hold,
the same results on every rank.

Programs come from ``differential_programs.programs`` (tp2 x pp2: TP/PP/world collectives,
p2p tensor messages, skips, extra calls, early exits, wrong ops, roots, shapes and dtypes,
raises, and whole-group skips that strict mode allows). A gloo launch costs a second or two
here, so the examples are bounded: PER_KIND programs of each deviation kind, one launch
each, and legal ones batched many to a launch (``run_all``). TRTSIM_DIFFERENTIAL_EXAMPLES raises the count for a longer
search. Disagreements found are kept in ``differential_corpus``.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import trtsim
from tests import differential_programs as D
from tests.differential_corpus import CORPUS, EXECUTOR_DEADLOCK

pytestmark = pytest.mark.timeout(600)

PER_KIND = int(os.environ.get("TRTSIM_DIFFERENTIAL_EXAMPLES", "3"))   # per deviation kind
LEGAL_BATCHES, PER_BATCH = 2, 12
TIMEOUT = 60.0           # a launch on a loaded 2-core machine can take many seconds to start
SEARCH = dict(deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def agree(program: D.Program) -> D.Verdict:
    here, there = D.verdict(program, "inproc", TIMEOUT), D.verdict(program, "gloo", TIMEOUT)
    assert here == there, f"{program}\ninproc: {here}\ngloo:   {there}"
    return here


@pytest.mark.parametrize("kind", D.DEVIATIONS)
def test_generated_programs_with_a_deviation_get_one_verdict(kind):
    @settings(max_examples=PER_KIND, **SEARCH)
    @given(program=D.programs(deviate=kind))
    def search(program):
        agree(program)

    search()


@settings(max_examples=LEGAL_BATCHES, **SEARCH)
@given(batch=st.lists(D.programs(deviate=False), min_size=PER_BATCH, max_size=PER_BATCH))
def test_generated_legal_programs_hold_with_equal_results(batch):
    args = (tuple(batch),)
    here = D.verdict(None, "inproc", TIMEOUT, prog=D.run_all, args=args)
    there = D.verdict(None, "gloo", TIMEOUT, prog=D.run_all, args=args)
    assert here.kind == "ok", here
    assert here == there


def test_the_generator_reaches_every_verdict():
    # The search must be able to fail: its programs end in every verdict on inproc.
    seen = set()

    for deviate in (False, *D.DEVIATIONS):
        @settings(max_examples=10, **SEARCH)
        @given(program=D.programs(deviate=deviate))
        def sample(program):
            seen.add(D.verdict(program, "inproc", TIMEOUT).kind)

        sample()
    assert seen == {"ok", "mismatch", "deadlock", "failed"}


def test_a_legal_whole_group_skip_is_ok_and_noted_on_both():
    step = D.Step("tp", "allgather", 0, "gen_only")
    program = D.Program((step, D.Step("world", "barrier", 1, "end")), legal=((0, (2, 3)),))
    for backend in ("inproc", "gloo"):
        res = trtsim.launch(D.run, tp=2, pp=2, backend=backend, args=(program,), timeout=TIMEOUT)
        assert res[0] == [[{"rank": 0, "step": 0}, {"rank": 1, "step": 0}], None]
        assert res[2] == [None]
        assert res.divergence, backend


@pytest.mark.parametrize("entry", [pytest.param(e, id=e.name, marks=[pytest.mark.xfail(
    strict=True, reason=e.xfail)] if e.xfail else []) for e in CORPUS])
def test_corpus(entry):
    assert agree(entry.program).kind == entry.expect


@pytest.mark.parametrize("backend", ["inproc", "gloo"])
def test_corpus_executor_deadlock(backend):
    name, overrides = EXECUTOR_DEADLOCK
    res = trtsim.run(name, backend=backend, overrides=overrides)
    assert res.verdict == "deadlock", res.error
    assert res.error.group_kind == "pp" and res.error.group_ranks == (0, 1)
    assert set(res.error.ranks) == {0, 1}


# -- torchrun: a handful of fixed programs, one torchrun job each --------------------------
TORCHRUN_PROGRAMS = {
    "legal": D.Program((D.Step("tp", "allreduce", 0, "a", (2,), "int64"),
                        D.Step("p2p", "send_tensor", 0, "m", (3,), pair=(1, 3), send="wait"),
                        D.Step("pp", "gather", 1, "g", root=1))),
    "skip": D.Program((D.Step("pp", "allgather", 0, "x"), D.Step("pp", "allgather", 1, "y")),
                      D.Deviation("skip", 2, 0)),
    "p2p_size": CORPUS[1].program,
    "exit": D.Program((D.Step("world", "barrier", 0, "b"),), D.Deviation("exit", 3, 0)),
    "dropped_isend": CORPUS[0].program,
}

JOB = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, {root!r})
    from tests import differential_programs as D
    from tests.test_differential import TORCHRUN_PROGRAMS

    if __name__ == "__main__":
        v = D.verdict(TORCHRUN_PROGRAMS[sys.argv[1]], "gloo", 60)
        line = " ".join(["VERDICT", os.environ["RANK"], json.dumps(v.__dict__)])
        sys.stdout.write(line + chr(10))        # one write: the ranks share the pipe
        sys.stdout.flush()
""")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TORCHRUN_PROGRAMS))
def test_fixed_programs_under_torchrun_agree_with_inproc(tmp_path, name):
    job = tmp_path / "job.py"
    job.write_text(JOB.format(root=os.getcwd()))
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                          "--nproc-per-node", "4", str(job), name], capture_output=True,
                         text=True, timeout=200, cwd=tmp_path)
    lines = [line.split(" ", 2) for line in out.stdout.splitlines() if line.startswith("VERDICT")]
    # every rank raises the verdict from launch: the one that found the report, the ones
    # waiting in a collective or done, and one whose peer left after the report
    assert sorted(int(rank) for _, rank, _ in lines) == [0, 1, 2, 3], out.stderr[-3000:]
    want = D.verdict(TORCHRUN_PROGRAMS[name], "inproc", TIMEOUT)
    for _, rank, got in lines:
        got = D.Verdict(**{k: tuple(v) if isinstance(v, list) else v
                           for k, v in json.loads(got).items()})
        assert (got.kind, got.group_kind, got.group_ranks, got.culprits) == \
            (want.kind, want.group_kind, want.group_ranks, want.culprits), (rank, got)
        if want.kind == "ok":
            assert got.message == want.message          # every rank's results
