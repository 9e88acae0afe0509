"""The control plane's host collectives per iteration, counted on the real code path.

trtsim runs its own PyExecutor and KvCacheTransceiverV2 (in the versions the scenario follows:
``executor.version``, ``transceiver.version``, the sticky variant) on the instance layouts of a
perf scenario -- one context and one generation server, a small workload, the inproc backend --
and reads the census: per role, how many host-object collectives a rank enters in an iteration
that forwards a batch (the iterations the serving simulation prices), by group size and by how
the members meet (``perf.iteration.HostCollectives``). Nothing here is assumed about which
gathers exist: switching a version or ``sticky_skip`` changes the counts because the code path
changes. Each role is counted with its own loop (PP, overlap or plain) and batch limit.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import asdict

from ..comm.launcher import LaunchConfig, run_ranks
from ..disagg.transceiver_config import DisaggPeers, TransceiverConfig
from ..layout.places import InstanceLayout
from ..perf.iteration import HostCollectives
from ..perf.serving_sim import ControlPlane, InstanceConfig
from ..scenario.functional import ScenarioError, load_scenario
from .census import Census
from .serving_job import ServingJob, serving_program

# Calls of the transceiver's construction run once, not per iteration.
INIT_LABELS = {"instance_name", "rank_info", "layer_num_per_pp"}
# One root sends or receives: the members do not wait for each other.
ROOTED_LABELS = {"fetch_requests", "responses", "first_token", "transfer_responses"}
# Entered right after the consensus gather of the same check: the members arrive together.
ALIGNED_LABELS = {"ctx_outcome", "gen_outcome"}


def _instance(inst: InstanceConfig) -> dict:
    lay = inst.layout
    return {"tp": lay.tp_size, "pp": lay.pp_size, "cp": lay.cp_size,
            "attention_dp": lay.enable_attention_dp}


def loop_of(inst: InstanceConfig) -> str:
    """The loop setting of a role: overlap unless disabled (an instance with pp > 1 runs the
    PP loop whatever it says, as in TensorRT-LLM)."""
    return "plain" if inst.disable_overlap_scheduler else "overlap"


def _census_scenario(ctx: InstanceConfig, gen: InstanceConfig, inst: InstanceConfig,
                     transceiver: TransceiverConfig, executor_version: str, requests: int):
    return load_scenario({
        "name": "control_plane_census",
        "deployment": {"ctx": _instance(ctx), "gen": _instance(gen),
                       "num_layers": max(4, ctx.layout.pp_size, gen.layout.pp_size)},
        "workload": {"kind": "serving", "num_requests": requests, "input_len": 64,
                     "output_len": 16, "arrival_interval": 1},
        "transceiver": asdict(transceiver),
        "executor": {"max_batch_size": inst.max_batch_size, "loop": loop_of(inst),
                     "version": executor_version}})


def census_run(ctx: InstanceConfig, gen: InstanceConfig, transceiver: TransceiverConfig,
               executor_version: str, role: str, requests: int = 12):
    """Run both instances with ``role``'s loop and batch limit: (census, executor reports)."""
    inst = ctx if role == "ctx" else gen
    try:
        scen = _census_scenario(ctx, gen, inst, transceiver, executor_version, requests)
    except ScenarioError as exc:          # a layout the executor's own checks refuse
        raise RuntimeError(f"control-plane census run failed: {str(exc).split(': ', 1)[-1]}") \
            from None
    dep = scen.deployment
    job = ServingJob(DisaggPeers("ctx", dep.ctx, "gen", dep.gen), scen.kv, scen.workload,
                     scen.executor, scen.transceiver, scen.seed)
    out = run_ranks([InstanceLayout("ctx", "ctx", dep.ctx), InstanceLayout("gen", "gen", dep.gen)],
                    serving_program, (job,), LaunchConfig("inproc", "strict", scen.seed))
    if out.error is not None:
        raise RuntimeError(f"control-plane census run failed: {out.error}")
    roles = ["ctx"] * dep.ctx.world_size + ["gen"] * dep.gen.world_size
    return Census.from_ranks(out.census, roles), out.results


def per_forward_iteration(census: Census, reports, role: str, inst: InstanceConfig
                          ) -> tuple[HostCollectives, tuple[tuple, ...]]:
    """Calls per rank in the iterations where the role's instance forwarded a batch: by how
    the members meet, and by (role, label, group kind, group size, how they meet, calls)."""
    forward = {s.iteration for r in reports if r.role == role for s in r.stats if s.batch}
    ranks = sum(r.role == role for r in reports)
    rows = [r for r in census.select(role=role) if r.iteration in forward and r.kind != "p2p"
            and r.label not in INIT_LABELS]
    tp_labels = {(r.rank, r.iteration, r.label) for r in rows if r.kind == "tp"}
    counts: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    labels: dict[tuple[str, str, int, str], int] = defaultdict(int)
    for r in rows:
        size = inst.layout.group_size(r.kind)
        if size <= 1:
            continue
        if r.label in ROOTED_LABELS:
            kind = "rooted"
        elif r.label in ALIGNED_LABELS or (r.kind == "pp" and (r.rank, r.iteration, r.label)
                                           in tp_labels):
            kind = "aligned"             # e.g. the PP consensus right after the TP one
        else:
            kind = "sync"
        counts[kind][size] += r.count
        labels[(r.label, r.kind, size, kind)] += r.count
    per = max(1, ranks * len(forward))
    colls = HostCollectives(**{k: tuple((n, c / per) for n, c in sorted(v.items()))
                               for k, v in counts.items()})
    return colls, tuple((role, *key, c / per) for key, c in sorted(labels.items()))


@functools.lru_cache(maxsize=64)
def measure_control_plane(ctx: InstanceConfig, gen: InstanceConfig,
                          transceiver: TransceiverConfig = TransceiverConfig(),
                          executor_version: str = "trtsim") -> ControlPlane:
    """Count host collectives per forward rank-iteration of each role on trtsim's executor."""
    same = (loop_of(ctx), ctx.max_batch_size) == (loop_of(gen), gen.max_batch_size)
    runs = {}
    for role in ("ctx", "gen"):
        key = "ctx" if same else role
        if key not in runs:
            runs[key] = census_run(ctx, gen, transceiver, executor_version, key)
    parts = {role: per_forward_iteration(*runs["ctx" if same else role], role, inst)
             for role, inst in (("ctx", ctx), ("gen", gen))}
    return ControlPlane(ctx=parts["ctx"][0], gen=parts["gen"][0],
                        detail=parts["ctx"][1] + parts["gen"][1],
                        source=f"executor {executor_version}, transceiver {transceiver.version}, "
                               f"sticky_skip {transceiver.sticky_skip}")
