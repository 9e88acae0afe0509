"""The incremental wait-for graph agrees with the full analysis (``find_deadlock``) at every
step of random schedules of random programs: it flags a stuck set exactly when one forms."""

from hypothesis import given, settings, strategies as st

from trtsim.guard.waitfor import (BLOCKED, DONE, RUNNING, RankState, find_deadlock,
                                      waits_for)
from trtsim.guard.waitgraph import WaitGraph
from trtsim.calls.records import CallRecord


@st.composite
def programs(draw):
    """Ranks, groups, each rank's script of collectives and blocking p2p calls, and the
    scheduler's choices."""
    n = draw(st.integers(2, 6))
    groups = draw(st.lists(st.sets(st.integers(0, n - 1), min_size=2, max_size=n)
                           .map(lambda s: tuple(sorted(s))), min_size=1, max_size=4))
    scripts = []
    for r in range(n):
        mine = [i for i, g in enumerate(groups) if r in g]
        peers = st.integers(0, n - 1).filter(lambda p, r=r: p != r)
        ops = [st.tuples(st.sampled_from(("send", "recv")), peers, st.integers(0, 1))]
        if mine:
            ops.append(st.tuples(st.just("coll"), st.sampled_from(mine), st.just(0)))
        scripts.append(draw(st.lists(st.one_of(*ops), max_size=6)))
    return n, groups, scripts, draw(st.lists(st.integers(0, 10 ** 6), max_size=80))


class Sim:
    """A scheduler over the scripts, feeding the graph the events the inproc kernel feeds it."""

    def __init__(self, n, groups, scripts):
        self.groups, self.scripts = groups, scripts
        self.status = [RUNNING] * n
        self.calls: list = [None] * n
        self.pc = [0] * n
        self.seq = {}
        self.posted = [dict() for _ in range(n)]
        self.open: dict[tuple, set] = {}
        self.graph = WaitGraph(self.status, self.calls)

    def runnable(self):
        return [r for r, s in enumerate(self.status) if s == RUNNING]

    def wake(self, r):
        self.status[r], self.calls[r] = RUNNING, None

    def step(self, r) -> bool:
        """Run rank r's next op; whether the graph flags a stuck set after it."""
        if self.pc[r] == len(self.scripts[r]):
            self.status[r] = DONE
            return self.graph.stuck_after_finish(r)
        op, arg, tag = self.scripts[r][self.pc[r]]
        self.pc[r] += 1
        if op == "coll":
            group = self.groups[arg]
            seq = self.seq[(r, arg)] = self.seq.get((r, arg), 0) + 1
            rec = CallRecord("allgather", seq, None, 0, "", "object", rank=r,
                             group_kind=f"g{arg}", group_ranks=group)
            key = (rec.group_key, seq)
            self.posted[r][rec.group_key] = seq
            self.graph.enter(r, key, group)
            posters = self.open.setdefault(key, set())
            posters.add(r)
            if len(posters) == len(group):
                del self.open[key]
                for m in posters:
                    self.wake(m)
                return False
        else:
            rec = CallRecord(f"{op}_object", 0, None, 0, "", "object", rank=r,
                             group_kind="p2p", group_ranks=tuple(sorted((r, arg))), peer=arg,
                             tag=tag)
            other = self.calls[arg]
            want = "recv_object" if op == "send" else "send_object"
            if self.status[arg] == BLOCKED and other is not None and other.op == want \
                    and other.peer == r and other.tag == tag:
                self.wake(arg)
                return False
        self.status[r], self.calls[r] = BLOCKED, rec
        return self.graph.stuck_after_block(r)

    def states(self):
        return {r: RankState(r, self.status[r], self.calls[r], dict(self.posted[r]))
                for r in range(len(self.status))}


@settings(max_examples=400, deadline=None)
@given(programs())
def test_the_graph_flags_a_stuck_set_exactly_when_the_full_analysis_finds_one(case):
    n, groups, scripts, choices = case
    sim = Sim(n, groups, scripts)
    for choice in choices + [0] * 200:
        ready = sim.runnable()
        if not ready:
            break
        flagged = sim.step(ready[choice % len(ready)])
        states = sim.states()
        assert flagged == bool(find_deadlock(states)), (groups, scripts)
        # whom each blocked rank waits for, as the report reads it at thousands of ranks
        for s in states.values():
            assert sim.graph.waits_in(s, states) == waits_for(s, states)
        if flagged:
            return
    if any(s != DONE for s in sim.status) and not sim.runnable():
        assert find_deadlock(sim.states())      # idle with unfinished ranks: stuck, as flagged


def test_a_finished_rank_leaves_its_waiters_stuck():
    sim = Sim(2, [(0, 1)], [[("coll", 0, 0)], []])
    assert not sim.step(0)                   # rank 0 waits for rank 1, which still runs
    assert sim.step(1)                       # rank 1 returns without entering: stuck

