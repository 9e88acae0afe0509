"""The lockstep tracker compares each kind's groups once every rank has left an iteration:
fed calls and iteration moves in any interleaving, it notes exactly the group pairs whose call
lists differ in some iteration, as comparing the finished lists would."""

import random

from hypothesis import given, settings, strategies as st

from trtsim.guard.lockstep import LockstepTracker
from trtsim.calls.records import CallRecord

TP, PP = 2, 3                      # ranks r = pp_rank * TP + tp_rank
RANKS = range(TP * PP)
GROUPS = {("", "tp"): [tuple(p * TP + t for t in range(TP)) for p in range(PP)],
          ("", "pp"): [tuple(p * TP + t for p in range(PP)) for t in range(TP)]}
LABELS = ("a", "b", "c")


def group_of(kind: str, rank: int) -> tuple[int, ...]:
    return next(g for g in GROUPS[("", kind)] if rank in g)


# Per (kind, group index, iteration): the labels of that group's calls.
plans = st.fixed_dictionaries({
    (kind, g, it): st.lists(st.sampled_from(LABELS), max_size=3)
    for kind in ("tp", "pp") for g in range(len(GROUPS[("", kind)])) for it in range(3)})


def run(plan: dict, seed: int) -> set:
    """Each rank walks its iterations, entering its groups' calls of each; the ranks are
    interleaved at random. Returns the tracker's notes as (kind, iteration, group pair)."""
    tracker = LockstepTracker(GROUPS)
    seq: dict = {}
    steps = {}
    for r in RANKS:
        mine = []
        for it in range(3):
            mine.append(("iter", it))
            for kind in ("tp", "pp"):
                g = group_of(kind, r)
                for label in plan[(kind, GROUPS[("", kind)].index(g), it)]:
                    mine.append(("call", kind, g, label, it))
        mine.append(("iter", None))
        steps[r] = mine
    rng = random.Random(seed)
    at = {r: 0 for r in RANKS}
    while any(at[r] < len(steps[r]) for r in RANKS):
        r = rng.choice([r for r in RANKS if at[r] < len(steps[r])])
        step = steps[r][at[r]]
        at[r] += 1
        if step[0] == "iter":
            tracker.on_progress(r, step[1])
            continue
        _, kind, g, label, it = step
        n = seq[(r, g)] = seq.get((r, g), 0) + 1
        tracker.on_call(CallRecord("allgather", n, label, it, "x.py:1", "object", rank=r,
                                   local_rank=r, group_kind=kind, group_ranks=g))
    return {(d.group_kind, d.iteration, frozenset((d.group_ranks, d.other_ranks)))
            for d in tracker.notes()}


def expected(plan: dict) -> set:
    out = set()
    for kind in ("tp", "pp"):
        groups = GROUPS[("", kind)]
        for it in range(3):
            ref = plan[(kind, 0, it)]
            for i in range(1, len(groups)):
                if plan[(kind, i, it)] != ref:
                    out.add((kind, it, frozenset((groups[0], groups[i]))))
    return out


@settings(max_examples=150, deadline=None)
@given(plan=plans, seed=st.integers(0, 2**32 - 1))
def test_notes_are_the_pairs_whose_lists_differ_on_any_interleaving(plan, seed):
    assert run(plan, seed) == expected(plan)


def test_a_group_that_skips_a_call_is_noted_with_the_call():
    plan = {(k, g, it): ["a"] for k in ("tp", "pp") for g in range(len(GROUPS[("", k)]))
            for it in range(3)}
    plan[("tp", 1, 2)] = []
    assert run(plan, 0) == {("tp", 2, frozenset((GROUPS[("", "tp")][0], GROUPS[("", "tp")][1])))}
