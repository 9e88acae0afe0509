"""Alignment and judgement of rank histories, as properties over generated jobs.

A job here is a random program of collectives over two communicators, run by a small model
of a real communicator (the n-th call of every member pairs, whatever its purpose; a rank
blocks in a call until every member has entered that sequence), with faults a real run has:
a rank skipping a call, a rank calling from another function, a rank leaving early. Each
rank's history is then cut like a ring buffer that dropped its oldest entries, unevenly
across ranks. No Flight Recorder entries are made up: these are the typed histories the
readers produce.
"""

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trtsim.calls.records import CallRecord
from trtsim.jobs.replay_job import run_replay
from trtsim.postmortem.analysis import analyze
from trtsim.postmortem.history import Call, RankHistory
from trtsim.postmortem.inputs import Job
from trtsim.postmortem.replay import build_replay

GROUPS = {"world": None, "pair": (0, 1)}


def _record(rank, world, group, seq, site):
    ranks = tuple(range(world)) if GROUPS[group] is None else GROUPS[group]
    kind = "world" if len(ranks) == world else "group"
    return CallRecord("allgather", seq, None, 0, f"prog.py:{10 + site} in f{site}", "object",
                      rank, rank, "", kind, ranks, purpose=f"f{site} < main",
                      comm="torch:world" if group == "world" else "torch:1")


def run_model(world, steps, faults):
    """Each rank's calls (record, done, entry time) as a real communicator leaves them."""
    programs = {}
    for r in range(world):
        calls, seqs = [], {}
        for i, (group, site) in enumerate(steps):
            members = range(world) if GROUPS[group] is None else GROUPS[group]
            if r not in members:
                continue
            kind, at = faults.get(r, (None, None))
            if at == i and kind == "skip":
                continue
            if at is not None and i >= at and kind == "exit":
                break
            seqs[group] = seqs.get(group, 0) + 1
            site = site + 1 if (kind, at) == ("purpose", i) else site
            calls.append(_record(r, world, group, seqs[group], site))
        programs[r] = calls
    pos = {r: 0 for r in programs}
    done = {r: [] for r in programs}
    clock = 0
    entered = {}                           # rank -> when it entered its current call
    for r in programs:
        clock += 1
        entered[r] = clock
    progress = True
    while progress:
        progress = False
        for r in programs:
            if pos[r] >= len(programs[r]):
                continue
            rec = programs[r][pos[r]]
            here = [m for m in rec.group_ranks if pos[m] < len(programs[m])
                    and programs[m][pos[m]].group_key == rec.group_key
                    and programs[m][pos[m]].seq == rec.seq]
            if len(here) == len(rec.group_ranks):
                for m in here:
                    done[m].append((programs[m][pos[m]], True, entered[m]))
                    pos[m] += 1
                    clock += 1
                    entered[m] = clock
                progress = True
    for r in programs:                     # blocked: entered its next call, which never returned
        if pos[r] < len(programs[r]):
            done[r].append((programs[r][pos[r]], False, entered[r]))
    return done


def job_of(world, histories, cuts):
    out = []
    for r, calls in histories.items():
        cut = min(cuts.get(r, 0), max(len(calls) - 1, 0))      # the newest entry survives
        kept = tuple(Call(rec, ok, t) for rec, ok, t in calls[cut:])
        blocked = next((c for c in kept if not c.done), None)
        out.append(RankHistory(r, f"rank{r}", "flight recorder pickle", "2.10", kept,
                               "blocked" if blocked else "done", blocked, cut,
                               name=f"rank {r}"))
    return Job(tuple(out))


@st.composite
def jobs(draw, faulty):
    world = draw(st.integers(2, 4))
    steps = draw(st.lists(st.tuples(st.sampled_from(sorted(GROUPS)), st.integers(0, 2)),
                          min_size=2, max_size=14))
    faults = {}
    if faulty:
        rank = draw(st.integers(0, world - 1))
        faults[rank] = (draw(st.sampled_from(["skip", "purpose", "exit"])),
                        draw(st.integers(0, len(steps) - 1)))
    cuts = draw(st.dictionaries(st.integers(0, world - 1), st.integers(0, 10)))
    return world, steps, faults, cuts


def _visible(histories):
    """The faulty job's untruncated judgement (what a complete history shows)."""
    world = len(histories)
    return analyze(job_of(world, histories, {}))


settings_ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings_
@given(jobs(faulty=False))
def test_a_consistent_job_is_consistent_however_its_buffers_were_cut(job):
    world, steps, faults, cuts = job
    found = analyze(job_of(world, run_model(world, steps, faults), cuts))
    assert found.error is None, found.summary()


@settings_
@given(jobs(faulty=True))
def test_a_fault_is_found_in_complete_histories(job):
    world, steps, faults, _ = job
    histories = run_model(world, steps, faults)
    full = analyze(job_of(world, histories, {}))
    # a fault that changes nothing a communicator sees (a purpose change on a call that is
    # the same call anyway cannot happen here: every fault changes a record or a count)
    changed = histories != run_model(world, steps, {})
    assert (full.error is not None) == changed, full.summary()


@settings_
@given(jobs(faulty=True))
def test_truncation_hides_evidence_but_never_invents_it(job):
    world, steps, faults, cuts = job
    histories = run_model(world, steps, faults)
    cut = analyze(job_of(world, histories, cuts))
    if cut.error is not None and cut.error.kind == "mismatch":
        rec = next(iter(cut.error.calls.values()))
        complete = {r: c for r, calls in histories.items() for c, _, _ in calls
                    if c.group_key == rec.group_key and c.seq == rec.seq}
        assert len({(c.callsite, c.purpose) for c in complete.values()}) > 1
    for g in cut.alignment.groups:
        for m in g.truncated:
            assert g.first[m] == 0 or g.start >= g.first[m]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs(faulty=True), st.integers(0, 2**16))
def test_the_replay_reproduces_the_report_on_any_schedule(job, seed):
    world, steps, faults, cuts = job
    found = analyze(job_of(world, run_model(world, steps, faults), cuts))
    result = run_replay(build_replay(found), seed=seed)       # on any schedule
    assert result.reproduced, (found.summary(), result.summary())
    assert result.verdict == found.verdict


def test_the_model_pairs_a_skip_silently():
    # rank 1 skips step 1: its step-2 call pairs with rank 0's step-1 call, by sequence
    steps = [("world", 0), ("world", 0), ("world", 1)]
    histories = run_model(2, steps, {1: ("skip", 1)})
    assert [(r.seq, ok) for r, ok, _ in histories[0]] == [(1, True), (2, True), (3, False)]
    assert [(r.seq, r.purpose, ok) for r, ok, _ in histories[1]] == [
        (1, "f0 < main", True), (2, "f1 < main", True)]
    err = analyze(job_of(2, histories, {})).error
    assert err.kind == "mismatch" and err.summary.startswith("world group [0, 1]: call #2")


def test_a_root_comes_from_who_received():
    from trtsim.postmortem.align import align
    recs = {r: _record(r, 3, "world", 1, 0)._replace(op="gather") for r in range(3)}
    job = job_of(3, {r: [(recs[r], True, 1)] for r in range(3)}, {})
    claims = {0: False, 1: True, 2: False}
    job = Job(tuple(dataclasses.replace(h, calls=(dataclasses.replace(
        h.calls[0], claims_root=claims[h.rank]),)) for h in job.histories))
    roots = {h.rank: h.calls[0].record.root for h in align(job.histories).histories}
    assert roots == {0: 1, 1: 1, 2: 1}
    claims = {0: True, 1: True, 2: False}      # two believe they are the root
    job = Job(tuple(dataclasses.replace(h, calls=(dataclasses.replace(
        h.calls[0], claims_root=claims[h.rank]),)) for h in job.histories))
    err = analyze(job).error
    assert err.kind == "mismatch" and "differs in root (rank 0: 0, rank 1: 1)" in err.summary
