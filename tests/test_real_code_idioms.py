"""A catalogue of idioms from real serving code (tests/idioms.py), each with the verdict an
engineer of that code expects, on the inproc and the gloo backend. The legal ones are never
reported; the others are reported at their first divergent call with group, ranks and sites."""

import pytest

import trtsim
from tests import idioms

# (program, layout (tp, pp, attention_dp), launch keywords)
LEGAL = {
    "root_branch_broadcast": (idioms.root_branch_broadcast, (4, 1, False), {}),
    "optional_gather": (idioms.optional_gather, (4, 1, True), {}),
    "consensus_retry": (idioms.consensus_retry, (4, 1, False), {"iteration_marker": idioms.MARKER}),
    "decorated_collectives": (idioms.decorated_collectives, (2, 2, False), {}),
    "declared_wrappers": (idioms.declared_wrappers, (2, 2, False), {}),
    "wrapper_module": (idioms.wrapper_module, (2, 2, False),
                       {"wrappers": ("tests.idiom_helpers",)}),
}

# (program, layout, launch keywords, report type, group kind, group ranks, field or phrase)
REPORTED = {
    "one_helper_two_callers": (idioms.one_helper_two_callers, (2, 2, True),
                               {"iteration_marker": idioms.MARKER}, trtsim.CollectiveMismatch,
                               "pp", (0, 2), "differs in purpose"),
    "late_stage_first_session": (idioms.late_stage_first_session, (2, 2, True),
                                 {"iteration_marker": idioms.MARKER}, trtsim.CollectiveMismatch,
                                 "pp", (0, 2), "differs in iteration"),
    "idle_rank_early_return": (idioms.idle_rank_early_return, (4, 1, True),
                               {"iteration_marker": idioms.MARKER}, trtsim.CollectiveMismatch,
                               "tp", (0, 1, 2, 3), "differs in iteration"),
    "local_retry": (idioms.local_retry, (2, 1, False), {}, trtsim.CollectiveMismatch, "tp",
                    (0, 1), "differs in op"),
    "warmup_none_batch": (idioms.warmup_none_batch, (2, 2, True), {}, trtsim.CollectiveDeadlock,
                          None, None, "cross-group wait cycle"),
    "undeclared_split_helpers": (idioms.undeclared_split_helpers, (2, 2, False), {},
                                 trtsim.CollectiveMismatch, "world", (0, 1, 2, 3),
                                 "differs in purpose"),
}

BACKENDS = ["inproc", "gloo"]


def launch(prog, layout, backend, **kw):
    tp, pp, adp = layout
    return trtsim.launch(prog, tp=tp, pp=pp, attention_dp=adp, backend=backend, timeout=60, **kw)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(LEGAL))
def test_legal_idioms_are_never_reported(name, backend):
    prog, layout, kw = LEGAL[name]
    results = launch(prog, layout, backend, **kw)
    assert len(results) == layout[0] * layout[1] and results.divergence == []


def test_root_branch_broadcast_delivers_the_roots_value():
    assert launch(idioms.root_branch_broadcast, (4, 1, False), "inproc") == ["instance-0"] * 4


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(REPORTED))
def test_divergent_idioms_are_reported_at_the_first_divergent_call(name, backend):
    prog, layout, kw, kind, group_kind, group_ranks, phrase = REPORTED[name]
    with pytest.raises(trtsim.CollectiveError) as info:
        launch(prog, layout, backend, **kw)
    err = info.value
    assert type(err) is kind, str(err)     # found by the guard, not the launch's timeout
    assert phrase in str(err)
    if group_kind is not None:
        assert err.group_kind == group_kind and err.group_ranks == group_ranks
    assert err.calls and all("idiom" in rec.callsite for rec in err.calls.values()), str(err)


def test_one_helper_line_serves_two_purposes():
    """The line-based rule was blind here: both calls come from one line of one helper."""
    with pytest.raises(trtsim.CollectiveMismatch) as info:
        launch(*REPORTED["one_helper_two_callers"][:2], "inproc",
               **REPORTED["one_helper_two_callers"][2])
    recs = list(info.value.calls.values())
    assert len({r.callsite for r in recs}) == 1 and len({r.purpose for r in recs}) == 2
    assert "check_context" in info.value.summary and "check_gen" in info.value.summary


def test_the_idle_rank_is_named_as_the_one_that_skipped():
    with pytest.raises(trtsim.CollectiveMismatch) as info:
        launch(*REPORTED["idle_rank_early_return"][:2], "inproc",
               **REPORTED["idle_rank_early_return"][2])
    assert "rank 0 skipped a call" in info.value.explanation


def test_warmup_deadlock_names_the_gather_and_the_barrier():
    with pytest.raises(trtsim.CollectiveDeadlock) as info:
        launch(idioms.warmup_none_batch, (2, 2, True), "gloo")
    ops = {(rec.group_kind, rec.op) for rec in info.value.calls.values()}
    assert ops == {("tp", "allgather"), ("world", "barrier")}
