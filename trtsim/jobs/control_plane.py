"""The control plane's host collectives per iteration, counted on the real code path.

trtsim runs its own PyExecutor (the transceiver with the chosen sticky variant, the ADP
steps, the PP ring) on the instance layouts of a perf scenario -- one context and one
generation server, a small workload, the inproc backend -- and reads the census: per role,
how many calls each rank issues per iteration, by group size. The serving simulation prices
them with the measured host-gather cost. Nothing here is assumed about which gathers exist:
switching ``sticky_skip`` changes the counts because the code path changes.
"""

from __future__ import annotations

import functools

from ..perf.serving_sim import ControlPlane, InstanceConfig

# Calls of the transceiver's construction run once, not per iteration.
_INIT_LABELS = {"instance_name", "rank_info", "layer_num_per_pp"}


def _group_size(kind: str, inst: InstanceConfig) -> int:
    return {"tp": inst.tp, "pp": inst.pp, "cp": 1, "tp_cp": inst.tp,
            "world": inst.tp * inst.pp}[kind]


@functools.lru_cache(maxsize=64)
def measure_control_plane(ctx: InstanceConfig, gen: InstanceConfig, sticky_skip: str,
                          async_consensus: bool = False, requests: int = 12) -> ControlPlane:
    """Run the executor on the two layouts and count host collectives per rank-iteration."""
    from .run import run

    scenario = {
        "name": "control_plane_census",
        "deployment": {"ctx": {"tp": ctx.tp, "pp": ctx.pp, "attention_dp": ctx.attention_dp},
                       "gen": {"tp": gen.tp, "pp": gen.pp, "attention_dp": gen.attention_dp},
                       "num_layers": max(4, ctx.pp, gen.pp)},
        "workload": {"kind": "serving", "num_requests": requests, "input_len": 64,
                     "output_len": 16, "arrival_interval": 1},
        "transceiver": {"sticky_skip": sticky_skip, "async_consensus": async_consensus},
        "executor": {"max_batch_size": max(ctx.max_batch_size, gen.max_batch_size, 1)},
    }
    res = run(scenario)
    if res.verdict != "ok":
        raise RuntimeError(f"control-plane census run failed: {res.error}")
    out = {}
    for role, inst in (("ctx", ctx), ("gen", gen)):
        ranks = inst.tp * inst.pp
        iters = res.metrics[f"{role}_iterations"]
        per_size: dict[int, float] = {}
        for row in res.census.select(role=role):
            if row.kind == "p2p" or row.label in _INIT_LABELS:
                continue
            size = _group_size(row.kind, inst)
            if size > 1:
                per_size[size] = per_size.get(size, 0.0) + row.count / (ranks * iters)
        out[role] = tuple(sorted(per_size.items()))
    return ControlPlane(ctx=out["ctx"], gen=out["gen"])
