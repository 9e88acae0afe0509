"""trtsim.strategies is a public module: importable either way, every public name a
hypothesis strategy (or the tables explore varies), shrinking toward the fewest ranks."""

import importlib
import inspect

from hypothesis import find, given, settings, strategies as st
from hypothesis.strategies import SearchStrategy

import trtsim
import trtsim.strategies as ts

# The strategies that need a size; every other public function takes its defaults.
SIZED = {"faults": (4,), "delays": (8,), "overrides": (("topology", "seed"),),
         "spread": ([1, 2, 3],)}


def test_it_imports_either_way_as_one_module():
    from trtsim import strategies
    assert strategies is ts is trtsim.strategies is importlib.import_module("trtsim.strategies")


def test_every_public_function_is_a_strategy():
    functions = [n for n in ts.__all__ if inspect.isfunction(getattr(ts, n))]
    assert {"topology_ids", "transfer_requests", "seeds", "faults"} <= set(functions)
    for name in functions:
        assert isinstance(getattr(ts, name)(*SIZED.get(name, ())), SearchStrategy), name
    # Only the documented names are public: no list-returning topologies() to misuse.
    assert not hasattr(ts, "topologies") and not hasattr(ts, "topology")


@settings(max_examples=20, deadline=None)
@given(topology=ts.topology_ids(), requests=ts.transfer_requests(max_requests=3))
def test_drawn_values_are_what_a_scenario_takes(topology, requests):
    assert topology in trtsim.topologies()
    assert 1 <= len(requests) <= 3 and all(n >= 1 for n in requests)


def test_shrinking_goes_to_the_fewest_ranks():
    smallest = find(ts.topology_ids(), lambda t: trtsim.topology(t).world_size >= 8,
                    settings=settings(database=None))
    fewest = min(trtsim.topology(t).world_size for t in trtsim.topologies()
                 if trtsim.topology(t).world_size >= 8)
    assert trtsim.topology(smallest).world_size == fewest


@given(st.data())
def test_overrides_draw_one_entry_per_varied_key(data):
    drawn = data.draw(ts.overrides(("topology", "seed", "model.window")))
    assert set(drawn) == {"topology", "seed", "model.window"}
