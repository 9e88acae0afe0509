"""trtsim.strategies: hypothesis strategies for deployments, workloads, schedules and faults.

A public module, importable either way (``import trtsim.strategies as ts`` or
``from trtsim import strategies as ts``), for a user's own ``@given`` tests; ``trtsim explore``
searches with the same ones. Every strategy shrinks toward the case a person would want to
read: fewer ranks (topologies are drawn from a list ordered by total rank count), fewer and
shorter requests, seed 0, no fault. Each public function returns a hypothesis ``SearchStrategy``:

    from hypothesis import given, settings
    import trtsim
    import trtsim.strategies as ts

    @settings(max_examples=10, deadline=None)
    @given(topology=ts.topology_ids(), requests=ts.transfer_requests(max_requests=3))
    def test_my_change_moves_every_block(topology, requests):
        result = trtsim.run("kv_transfer", overrides={"topology": topology,
                                                      "workload.requests": requests})
        assert result.holds

``topology_ids`` draws the ids ``trtsim topologies`` lists (a scenario's ``topology`` key, or
``trtsim.topology(id)`` for the ``Deployment``).
"""

from __future__ import annotations

import random

from hypothesis import strategies as st

from .layout.topology import topologies as _topologies, topology as _topology
from .state.fault import SPELLINGS as _FAULTS

__all__ = ["topology_ids", "spread", "free_deployments", "prompt_lengths", "transfer_requests",
           "serving_workloads", "windows", "seeds", "faults", "dp_offsets", "delays",
           "sticky_variants", "overrides", "VARIABLE_KEYS", "BOUNDARY_LENGTHS"]

# Lengths a paged KV cache treats specially: block edges (8 tokens a block) and the edges of a
# 24-token window, and a few ordinary ones.
BOUNDARY_LENGTHS = (1, 7, 8, 9, 23, 24, 25, 32, 33)


def by_size(ids: list[str]) -> list[str]:
    """Ids ordered by total ranks, then table order: shrinking moves toward fewer ranks."""
    order = {tid: i for i, tid in enumerate(_topologies())}
    return sorted(ids, key=lambda t: (_topology(t).world_size, order[t]))


def topology_ids(ids: list[str] | None = None) -> st.SearchStrategy[str]:
    """A DESIGN 3.2 topology id (all, or those given), smallest first when shrinking."""
    return st.sampled_from(by_size(list(ids) if ids else _topologies()))


def spread(choices: list) -> st.SearchStrategy:
    """One of ``choices``, evenly spread even when combined with other strategies (hypothesis
    otherwise revisits some elements of a product space and never reaches others). Shrinking
    does not order it; ``trtsim.explore`` polishes the result along the choices' order."""
    return st.integers(0, 2 ** 63 - 1).map(
        lambda x: choices[random.Random(x).randrange(len(choices))])


@st.composite
def free_deployments(draw, max_tp: int = 4, max_pp: int = 4, max_world: int = 8) -> dict:
    """A scenario ``deployment`` mapping outside the table: any tp x pp per instance, attention
    DP on or off, MLA or not, enough layers for every stage."""
    def instance():
        tp = draw(st.sampled_from([t for t in (1, 2, 4, 8) if t <= max_tp]))
        pp = draw(st.integers(1, min(max_pp, max(1, max_world // tp))))
        return {"tp": tp, "pp": pp, "attention_dp": draw(st.booleans()) if tp > 1 else False}
    ctx, gen = instance(), instance()
    layers = draw(st.integers(max(ctx["pp"], gen["pp"]), 8))
    return {"ctx": ctx, "gen": gen, "num_layers": layers, "mla": draw(st.booleans())}


def prompt_lengths(max_len: int = 200) -> st.SearchStrategy[int]:
    """A prompt length: block and window boundaries first, then anything up to ``max_len``."""
    return st.one_of(st.sampled_from(BOUNDARY_LENGTHS), st.integers(1, max_len))


def transfer_requests(max_requests: int = 6, max_len: int = 200) -> st.SearchStrategy[list[int]]:
    """The prompt lengths of a transfer test (request i on DP rank i % tp under ADP). The count
    is drawn first and evenly, so few-request cases (an idle DP rank) are tried as often as
    many-request ones."""
    return st.integers(1, max_requests).flatmap(
        lambda n: st.lists(prompt_lengths(max_len), min_size=n, max_size=n))


@st.composite
def serving_workloads(draw, max_requests: int = 24) -> dict:
    """A scenario ``workload`` mapping for the executor loops: counts, lengths, arrivals."""
    low = draw(st.integers(1, 120))
    out_low = draw(st.integers(1, 16))
    return {"kind": "serving", "num_requests": draw(st.integers(1, max_requests)),
            "input_len": [low, low + draw(st.integers(0, 80))],
            "output_len": [out_low, out_low + draw(st.integers(0, 16))],
            "arrival_interval": draw(st.integers(0, 4))}


def windows() -> st.SearchStrategy:
    """The window variants of the transfer test: none, uniform 24, variable [256, 24]."""
    return st.sampled_from([None, 24, [256, 24]])


def seeds() -> st.SearchStrategy[int]:
    """The inproc backend's schedule seed (the interleaving of ranks)."""
    return st.integers(0, 2 ** 31 - 1)


def faults(num_requests: int) -> st.SearchStrategy[dict[int, str]]:
    """At most one injected fault per request: a failed or cancelled transfer, a timeout."""
    return st.dictionaries(st.integers(0, num_requests - 1),
                           st.sampled_from([f for f in _FAULTS if "@" not in f]),
                           max_size=min(2, num_requests))


def dp_offsets() -> st.SearchStrategy[int]:
    """How the router deals requests to DP ranks: request i on DP rank (i + offset) % tp."""
    return st.integers(0, 7)


def delays(num_ranks: int, max_ms: int = 5) -> st.SearchStrategy[dict[int, int]]:
    """A few slow ranks: global rank -> milliseconds of extra work before each call (on the
    inproc backend, scheduling ticks: deterministic)."""
    return st.dictionaries(st.integers(0, num_ranks - 1), st.integers(1, max_ms), max_size=2)


def sticky_variants() -> st.SearchStrategy[str]:
    """A ``transceiver.sticky_skip`` variant (docs/STICKY_SKIP.md)."""
    from .disagg.transceiver_config import STICKY_VARIANTS
    return st.sampled_from(STICKY_VARIANTS)


# Keys ``explore`` knows how to vary, and how.
VARIABLE_KEYS = {
    "topology": lambda: spread(by_size(_topologies())),
    "deployment": lambda: free_deployments(),
    "workload.requests": lambda: transfer_requests(),
    "workload": lambda: serving_workloads(),
    "model.window": windows,
    "seed": seeds,
    "workload.dp_offset": dp_offsets,
    "transceiver.sticky_skip": sticky_variants,
}


def overrides(vary: tuple[str, ...]) -> st.SearchStrategy[dict]:
    """A dict of scenario overrides, one entry per varied key."""
    unknown = [k for k in vary if k not in VARIABLE_KEYS]
    if unknown:
        raise ValueError(f"vary: {unknown[0]!r} cannot be varied; known: "
                         f"{', '.join(VARIABLE_KEYS)}")
    return st.fixed_dictionaries({k: VARIABLE_KEYS[k]() for k in vary})
