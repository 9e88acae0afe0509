"""The purpose key of a call: the chain of functions that made it, at function granularity,
without trtsim's frames or declared wrappers; the call site stays file:line."""

import trtsim
from trtsim.comm.origin import OriginFinder, call_rank_program


def _probe(finder):
    return finder.find(0)


def two_lines(finder, first):
    if first:
        return finder.find(0)
    return finder.find(0)


def caller_a(finder):
    return helper(finder)


def caller_b(finder):
    return helper(finder)


def helper(finder):
    return _probe(finder)


@trtsim.collective_wrapper
def declared(finder):
    return _probe(finder)


def entry(finder, fn, *args):
    return call_rank_program(lambda _d, *a: fn(*a), None, (finder, *args))


def test_two_lines_of_one_function_are_one_purpose():
    f = OriginFinder()
    a, b = entry(f, two_lines, True), entry(f, two_lines, False)
    assert a.purpose == b.purpose and a.callsite != b.callsite
    assert a.callsite.startswith("tests/test_purpose_keys.py:") and a.callsite.endswith("in two_lines")


def test_one_helper_from_two_callers_is_two_purposes():
    f = OriginFinder()
    a, b = entry(f, caller_a), entry(f, caller_b)
    assert a.callsite == b.callsite and a.purpose != b.purpose
    assert a.purpose.split(" < ")[:3] == ["_probe", "helper", "caller_a"]


def test_the_walk_ends_at_the_rank_entry():
    got = entry(OriginFinder(), helper)
    assert got.purpose.split(" < ")[-1] == "entry.<locals>.<lambda>"


def test_declared_wrappers_and_wrapper_modules_are_skipped():
    f = OriginFinder()
    got = entry(f, declared)
    assert "declared" not in got.purpose and got.purpose.startswith("_probe < entry")
    mod = OriginFinder(wrappers=("tests.test_purpose_keys",))
    assert entry(mod, helper).callsite == "<unknown>"
