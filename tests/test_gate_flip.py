"""Flip: a replay per latent gate with its outcome flipped on one member turns it into the
hang's report, naming the gate; the control reaches modules imported before the launch."""

from __future__ import annotations

import inspect

import pytest

import trtsim
from tests import gate_lib
from tests import gate_programs as gp
from tests.test_latent_gates import INCIDENTS, _site
from trtsim import CollectiveDeadlock, CollectiveMismatch


@pytest.mark.parametrize("name", sorted(INCIDENTS))
def test_flip_turns_the_gate_into_the_hang_report(name):
    prog, _, kw, inputs, _, _ = INCIDENTS[name]
    results = trtsim.launch(prog, args=(inputs,), gates="flip", **kw)
    assert results.latent, results.absorbed
    for gate in results.latent:
        assert gate.site.endswith(_site(name))
        assert isinstance(gate.flip, (CollectiveMismatch, CollectiveDeadlock))
        assert f"at {gate.site}" in gate.flip.explanation
        assert f"flipped on rank {gate.flip_rank}" in str(gate.flip)
        assert gate.flip_rank in gate.group_ranks


@pytest.mark.parametrize("name", sorted(INCIDENTS))
def test_flip_of_a_fixed_version_has_nothing_to_flip(name):
    _, fixed, kw, inputs, _, _ = INCIDENTS[name]
    results = trtsim.launch(fixed, args=(inputs,), gates="flip", **kw)
    assert results.latent == [] and results.absorbed == []


def test_flip_rank_is_the_odd_one_out():
    # three members with 4 tokens, one with 7: the one with 7 is flipped
    results = trtsim.launch(gp.dp_zero_token, tp=4, args=([[4, 4, 7, 4]],), gates="flip")
    assert [g.flip_rank for g in results.latent] == [2]


def test_same_seed_same_verdicts():
    runs = [trtsim.launch(gp.free_kv_blocks, tp=2, args=([[10, 12], [9, 9]],), gates="flip",
                          seed=5) for _ in range(2)]
    assert [(g, str(g.flip)) for g in runs[0].latent] == \
        [(g, str(g.flip)) for g in runs[1].latent]


def _lib_program(dist, schedule, helper):
    return [helper(dist, s[dist.global_rank]) for s in schedule]


def _line(fn, marker):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, t in enumerate(lines) if marker in t)


@pytest.mark.parametrize("helper,marker,inputs", [
    (gate_lib.step, "lib_step", [[3, 5]]),
    (gate_lib.chunked, "lib_chunks", [[3, 5]]),
    (gate_lib.budgeted, "lib_budget", [[9, 11]]),
])
def test_gates_of_a_module_imported_before_the_launch_are_flipped(helper, marker, inputs):
    site = f"gate_lib.py:{_line(helper, marker)}"
    observed = trtsim.launch(_lib_program, tp=2, args=(inputs, helper), gates="observe")
    assert [g.site.endswith(site) for g in observed.latent] == [True]
    # without gates_in the library's gate is not in trtsim's hands: nothing to flip
    blind = trtsim.launch(_lib_program, tp=2, args=(inputs, helper), gates="flip")
    assert blind.latent == [] and [g.site.endswith(site) for g in blind.absorbed] == [True]
    proved = trtsim.launch(_lib_program, tp=2, args=(inputs, helper), gates="flip",
                           gates_in=("tests.gate_lib",))
    assert [g.site.endswith(site) for g in proved.latent] == [True]
    assert proved.latent[0].flip is not None


def test_rewrite_keeps_lines_and_is_undone_after_the_launch():
    code = gate_lib.step.__code__
    seen = {}

    def prog(dist):
        seen["code"] = gate_lib.step.__code__
        seen["lines"] = list(gate_lib.step.__code__.co_lines())
        return gate_lib.step(dist, 2)

    trtsim.launch(prog, tp=2, gates="flip", gates_in=("tests.gate_lib",))
    assert seen["code"] is not code
    assert {line for *_, line in seen["lines"] if line} == \
        {line for *_, line in code.co_lines() if line}
    assert gate_lib.step.__code__ is code
    assert not hasattr(gate_lib, "__trtsim_gate__")


def test_flip_that_crashes_the_program_is_recorded_as_the_crash():
    results = trtsim.launch(_crashing, tp=2, args=([[3, 5]],), gates="flip")
    assert [type(g.flip).__name__ for g in results.latent] == ["RankFailed"]


def _crash_step(dist, n):
    value = None
    if n > 0:
        value = dist.allreduce(n, label="tokens")
    return value + 1                      # the flipped member adds to None


def _crashing(dist, schedule):
    return [_crash_step(dist, s[dist.global_rank]) for s in schedule]


def test_gate_whose_flip_reaches_the_same_collective_is_absorbed():
    results = trtsim.launch(gp.switch_steps, tp=2, args=(5, [2, 3]), gates="flip")
    assert results.latent == []
    assert [(g.site.endswith(_site("switch")), g.flip) for g in results.absorbed] == [
        (True, None)]


def _lazy_program(dist, schedule):
    import importlib
    lib = importlib.import_module("tests.gate_lazy_lib")    # first imported in the ranks
    return [lib.step(dist, s[dist.global_rank]) for s in schedule]


def test_gates_of_a_module_first_imported_during_the_launch_are_flipped():
    import sys
    sys.modules.pop("tests.gate_lazy_lib", None)
    results = trtsim.launch(_lazy_program, tp=2, args=([[3, 5]],), gates="flip",
                            gates_in=("tests.gate_lazy_lib",))
    assert [g.site.endswith("gate_lazy_lib.py:6") and g.flip is not None
            for g in results.latent] == [True]
    lib = sys.modules["tests.gate_lazy_lib"]
    assert "__trtsim_gate__" not in lib.step.__code__.co_names
    assert not hasattr(lib, "__trtsim_gate__")
    assert not any(type(f).__name__ == "GateImporter" for f in sys.meta_path)
