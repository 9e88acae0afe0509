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
from dataclasses import asdict

from ..disagg.transceiver import TransceiverConfig
from ..perf.serving_sim import ControlPlane, InstanceConfig

# Calls of the transceiver's construction run once, not per iteration.
_INIT_LABELS = {"instance_name", "rank_info", "layer_num_per_pp"}


def _instance(inst: InstanceConfig) -> dict:
    lay = inst.layout
    return {"tp": lay.tp_size, "pp": lay.pp_size, "cp": lay.cp_size,
            "attention_dp": lay.enable_attention_dp}


@functools.lru_cache(maxsize=64)
def measure_control_plane(ctx: InstanceConfig, gen: InstanceConfig,
                          transceiver: TransceiverConfig = TransceiverConfig(),
                          requests: int = 12) -> ControlPlane:
    """Run the executor on the two layouts and count host collectives per rank-iteration."""
    from .run import run

    scenario = {
        "name": "control_plane_census",
        "deployment": {"ctx": _instance(ctx), "gen": _instance(gen),
                       "num_layers": max(4, ctx.layout.pp_size, gen.layout.pp_size)},
        "workload": {"kind": "serving", "num_requests": requests, "input_len": 64,
                     "output_len": 16, "arrival_interval": 1},
        "transceiver": asdict(transceiver),
        "executor": {"max_batch_size": max(ctx.max_batch_size, gen.max_batch_size, 1)},
    }
    res = run(scenario)
    if res.verdict != "ok":
        raise RuntimeError(f"control-plane census run failed: {res.error}")
    out = {}
    for role, inst in (("ctx", ctx), ("gen", gen)):
        ranks = inst.layout.world_size
        iters = res.metrics[f"{role}_iterations"]
        per_size: dict[int, float] = {}
        for row in res.census.select(role=role):
            if row.kind == "p2p" or row.label in _INIT_LABELS:
                continue
            size = inst.layout.group_size(row.kind)
            if size > 1:
                per_size[size] = per_size.get(size, 0.0) + row.count / (ranks * iters)
        out[role] = tuple(sorted(per_size.items()))
    return ControlPlane(ctx=out["ctx"], gen=out["gen"])
