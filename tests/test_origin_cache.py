"""The origin walk remembers the frames of its last walk and stops where it meets one again;
what it returns must be exactly what a walk of the whole stack returns, whatever the calls
in between did: deeper and shallower call sites, loops, helpers reached from two callers, and
generators resumed from other callers than the one that started them (their frames change
callers, so nothing may be remembered inward of them)."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from trtsim.comm.origin import OriginFinder

# A script: probes (a guarded call's origin is taken there), calls into helpers A and B,
# generators started here and stepped later from A's or B's side.
_leaf = st.sampled_from([("probe",), ("step_a",), ("step_b",)])
scripts = st.recursive(
    st.lists(_leaf, max_size=4),
    lambda inner: st.lists(st.one_of(_leaf, st.tuples(st.sampled_from(["a", "b", "gen"]), inner)),
                           max_size=4),
    max_leaves=30)


class Walk:
    """Runs a script, comparing the remembering finder with a fresh one at every probe."""

    def __init__(self):
        self.finder = OriginFinder()
        self.gens: list = []
        self.probes = 0

    def probe(self):
        cached, full = self.finder.find(0), OriginFinder().find(0)
        assert cached == full
        self.probes += 1

    def run(self, ops):
        for op in ops:
            kind = op[0]
            if kind == "probe":
                self.probe()
            elif kind == "a":
                self.helper_a(op[1])
            elif kind == "b":
                self.helper_b(op[1])
            elif kind == "gen":
                gen = self.body(op[1])
                self.gens.append(gen)
                self.advance(gen)
            else:
                idle = [g for g in self.gens if not g.gi_running]
                if idle:
                    (self.step_from_a if kind == "step_a" else self.step_from_b)(idle[-1])

    def helper_a(self, ops):
        self.run(ops)
        self.probe()

    def helper_b(self, ops):
        self.probe()
        self.run(ops)

    def body(self, ops):
        for op in ops:
            self.run([op])
            self.probe()
            yield

    def advance(self, gen):
        next(gen, None)                   # no probe here: the next one may be inside gen

    def step_from_a(self, gen):
        self.advance(gen)

    def step_from_b(self, gen):
        self.probe()
        self.advance(gen)


@settings(max_examples=300, deadline=None)
@given(scripts)
def test_a_remembered_walk_finds_what_a_full_walk_finds(script):
    walk = Walk()
    walk.run(script)
    walk.run(script)                      # the same call sites again: the remembered path
    for gen in walk.gens:
        walk.step_from_b(gen)
    assert walk.probes >= script.count(("probe",))


def test_repeated_calls_from_one_loop_walk_only_the_new_frames():
    finder = OriginFinder()

    def site():
        return finder.find(0)

    def loop():
        return [site() for _ in range(3)]
    first, *rest = loop()
    assert all(o == first for o in rest)
    assert first.purpose.startswith(f"{site.__qualname__} < {loop.__qualname__}.<locals>")
    assert first == OriginFinder().find(0).__class__(first.callsite, first.purpose)
