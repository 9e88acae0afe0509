"""Properties of the guard over random programs (hypothesis).

- a symmetric program (every member of each group makes the same calls) is never flagged,
  whatever the layout, the seed, or which whole groups skip a call (a PP group under ADP);
- its results do not depend on the schedule's seed;
- deleting one call of one rank from a symmetric program is always reported.
"""

from hypothesis import HealthCheck, assume, given, settings, strategies as st

import trtsim

# For each group kind, the rank attributes that are constant within a group of that kind:
# a predicate on them makes whole groups skip together, which is legal.
GROUP_CONSTANT = {"tp": ("pp_rank", "cp_rank"), "pp": ("tp_rank", "dp_rank", "cp_rank"),
                  "cp": ("tp_rank", "pp_rank"), "tp_cp": ("pp_rank",), "world": ()}
# The methods Distributed offers per kind (TRT-LLM's names).
OPS = {"tp": ("allgather", "broadcast", "allreduce", "gather"), "pp": ("allgather", "broadcast"),
       "cp": ("allgather", "broadcast"), "tp_cp": ("allgather",),
       "world": ("allgather", "broadcast", "allreduce", "barrier")}


@st.composite
def layouts(draw):
    tp = draw(st.sampled_from([1, 2, 4]))
    pp = draw(st.sampled_from([1, 2, 3]))
    cp = draw(st.sampled_from([1, 2])) if tp * pp <= 4 else 1
    return tp, pp, cp, draw(st.booleans())


@st.composite
def steps(draw):
    kind = draw(st.sampled_from(sorted(GROUP_CONSTANT) + ["ring"]))
    if kind == "ring":
        return ("ring", draw(st.integers(0, 3)))
    op = draw(st.sampled_from(OPS[kind]))
    attrs = GROUP_CONSTANT[kind]
    pred = None
    if attrs and draw(st.booleans()):
        pred = (draw(st.sampled_from(attrs)), draw(st.integers(0, 3)))
    return (kind, op, draw(st.sampled_from(["a", "b", None])), pred)


def interpret(dist, program, skip=None):
    """Run ``program`` (iterations of steps); ``skip=(rank, k)`` drops that rank's k-th call."""
    count, out = 0, []

    def call(fn, *args, **kw):
        nonlocal count
        count += 1
        if skip is not None and skip == (dist.rank, count - 1):
            return None
        return fn(*args, **kw)

    for it, body in enumerate(program):
        dist.set_iteration(it)
        for step in body:
            if step[0] == "ring":
                if dist.pp_size > 1:
                    m = dist.mapping
                    h = call(dist.isend_object, (dist.rank, it), m.next_pp_rank(), tag=step[1])
                    out.append(call(dist.recv_object, m.prev_pp_rank(), tag=step[1]))
                    if h is not None:
                        h.wait()
                continue
            kind, op, label, pred = step
            if pred is not None and getattr(dist, pred[0]) % 4 != pred[1]:
                continue
            size = len(dist.group_ranks(kind))
            if size == 1:            # deleting a call of a one-member group is invisible
                out.append(getattr(dist, _method(kind, op))(*_args(op, dist), label=label))
                continue
            out.append(call(getattr(dist, _method(kind, op)), *_args(op, dist), label=label))
    return count, out


def _method(kind, op):
    return op if kind == "world" else f"{kind}_{op}"


def _args(op, dist):
    if op == "barrier":
        return ()
    if op == "allreduce":
        return (dist.rank + 1,)
    if op in ("broadcast", "gather"):
        return ({"from": dist.rank},)
    return ([dist.rank],)


programs_st = st.lists(st.lists(steps(), min_size=1, max_size=6), min_size=1, max_size=3)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(layouts(), programs_st, st.integers(0, 2**16), st.sampled_from(["strict", "lockstep"]))
def test_symmetric_programs_are_never_flagged(layout, program, seed, guard):
    tp, pp, cp, adp = layout
    if guard == "lockstep":   # lockstep flags whole-group skips by design; keep them out
        program = [[s if s[0] == "ring" else (*s[:3], None) for s in body] for body in program]
    res = trtsim.launch(interpret, tp=tp, pp=pp, cp=cp, attention_dp=adp, args=(program,),
                        seed=seed, guard=guard)
    again = trtsim.launch(interpret, tp=tp, pp=pp, cp=cp, attention_dp=adp, args=(program,),
                          seed=seed + 1)
    assert res == again


@SETTINGS
@given(layouts(), programs_st, st.integers(0, 2**16), st.data())
def test_deleting_one_call_is_always_reported(layout, program, seed, data):
    tp, pp, cp, adp = layout
    counts = [c for c, _ in trtsim.launch(interpret, tp=tp, pp=pp, cp=cp, attention_dp=adp,
                                          args=(program,))]
    victims = [r for r, c in enumerate(counts) if c > 0]
    assume(victims)
    rank = data.draw(st.sampled_from(victims))
    k = data.draw(st.integers(0, counts[rank] - 1))
    try:
        trtsim.launch(interpret, tp=tp, pp=pp, cp=cp, attention_dp=adp,
                      args=(program, (rank, k)), seed=seed)
    except (trtsim.CollectiveMismatch, trtsim.CollectiveDeadlock) as err:
        assert rank in err.ranks or any(rank in (c.rank, c.peer) for c in err.calls.values())
    else:
        raise AssertionError(f"deleting call {k} of rank {rank} went unreported")


# -- the process backend's fast match is the guard's rule -----------------------------------
_FIELDS = dict(op=st.sampled_from(["allgather", "broadcast"]), seq=st.just(1),
               label=st.sampled_from([None, "a", "b"]), iteration=st.integers(0, 1),
               callsite=st.sampled_from(["x.py:1 in f", "x.py:2 in g"]),
               purpose=st.sampled_from(["f < main", "g < main"]),
               signature=st.sampled_from(["object", "tensor[float32, (2,)]"]),
               root=st.sampled_from([None, 0, 1]), reduce_op=st.sampled_from([None, "sum"]))


@given(st.fixed_dictionaries(_FIELDS), st.fixed_dictionaries(_FIELDS))
@settings(max_examples=300, deadline=None)
def test_ledger_hash_agrees_with_the_guard_rule(a, b):
    from trtsim.guard.rules import differences
    from trtsim.backends.process.record_codec import match_hash
    ra, rb = trtsim.CallRecord(**a), trtsim.CallRecord(**b)
    assert (match_hash(ra) == match_hash(rb)) == (not differences(ra, rb))
