"""The control plane's host collectives per iteration, counted on the real code path.

trtsim runs its own PyExecutor and KvCacheTransceiverV2 (in the versions the scenario follows:
``executor.version``, ``transceiver.version``, the sticky variant) on the instance layouts of a
perf scenario -- one context and one generation server, small workloads, the inproc backend --
and reads the census: per role, how many host-object collectives a rank enters in the
iterations that forward a batch (the iterations the serving simulation prices), by group size
and by how the members meet (``perf.iteration.HostCollectives``), split into a rate per forward
iteration and one per request by three workloads (``perf.census_fit``): the simulation applies
them at the scenario's own ISL/OSL and requests. Nothing here is assumed about which
gathers exist: switching a version or ``sticky_skip`` changes the counts because the code path
changes. Each role is counted with its own loop (PP, overlap or plain) and batch limit.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import asdict, replace

from ..calls.errors import CollectiveError
from ..comm.launch_config import LaunchConfig
from ..backends.run_ranks import run_ranks
from ..disagg.transceiver_config import DisaggPeers, TransceiverConfig
from ..layout.parallel import ParallelLayout
from ..layout.places import InstanceLayout
from ..perf.census_fit import CensusCount, fit_rates
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
# (requests, output tokens) of the three census workloads (perf.census_fit)
CENSUS_WORKLOADS = ((3, 3), (3, 9), (6, 3))


def _instance(inst: InstanceConfig) -> dict:
    lay = inst.layout
    return {"tp": lay.tp_size, "pp": lay.pp_size, "cp": lay.cp_size,
            "attention_dp": lay.enable_attention_dp}


def loop_of(inst: InstanceConfig) -> str:
    """The loop setting of a role: overlap unless disabled (an instance with pp > 1 runs the
    PP loop whatever it says, as in TensorRT-LLM)."""
    return "plain" if inst.disable_overlap_scheduler else "overlap"


def _census_scenario(ctx: InstanceConfig, gen: InstanceConfig, inst: InstanceConfig,
                     transceiver: TransceiverConfig, executor_version: str, requests: int,
                     output_len: int):
    return load_scenario({
        "name": "control_plane_census",
        "deployment": {"ctx": _instance(ctx), "gen": _instance(gen),
                       "num_layers": max(4, ctx.layout.pp_size, gen.layout.pp_size)},
        # the KV bytes move and are verified for real, but no count depends on their size
        "model": {"head_dim": 8},
        "workload": {"kind": "serving", "num_requests": requests, "input_len": 64,
                     "output_len": output_len, "arrival_interval": 1},
        "transceiver": asdict(transceiver),
        "executor": {"max_batch_size": inst.max_batch_size, "loop": loop_of(inst),
                     "version": executor_version}})


class CensusRunFailed(RuntimeError):
    """The executor cannot run a perf scenario's layouts to count their control plane.
    ``role`` (``ctx`` or ``gen``) is the instance at fault: the one whose layout the
    executor's own checks refuse, or the one of the rank the run's report names first; None
    when neither instance is at fault alone. ``reason`` is the failure's first line."""

    def __init__(self, reason: str, role: str | None):
        super().__init__(f"control-plane census run failed: {reason}")
        self.reason, self.role = reason, role


def failing_role(error: CollectiveError, roles: list[str]) -> str | None:
    """The role of the rank a census run's report names first (``roles[r]``: global rank
    r's), or None when it names none."""
    return roles[error.ranks[0]] if error.ranks else None


def _refused_role(ctx: InstanceConfig, gen: InstanceConfig, transceiver: TransceiverConfig,
                  executor_version: str, requests: int, output_len: int) -> str | None:
    """Which instance's layout the executor's checks refuse on its own: the census scenario
    with that instance next to a one-rank peer (which every check accepts), the context one
    first; None when each passes alone."""
    one_rank = ParallelLayout()
    alone = {"ctx": (ctx, replace(gen, layout=one_rank)),
             "gen": (replace(ctx, layout=one_rank), gen)}
    for role, (c, g) in alone.items():
        try:
            _census_scenario(c, g, c if role == "ctx" else g, transceiver, executor_version,
                             requests, output_len)
        except ScenarioError:
            return role
    return None


def census_run(ctx: InstanceConfig, gen: InstanceConfig, transceiver: TransceiverConfig,
               executor_version: str, role: str, requests: int = 12, output_len: int = 16):
    """Run both instances with ``role``'s loop and batch limit: (census, executor reports).
    ``CensusRunFailed`` when the executor cannot run them."""
    inst = ctx if role == "ctx" else gen
    try:
        scen = _census_scenario(ctx, gen, inst, transceiver, executor_version, requests,
                                output_len)
    except ScenarioError as exc:          # a layout the executor's own checks refuse
        raise CensusRunFailed(str(exc).split(": ", 1)[-1].splitlines()[0],
                              _refused_role(ctx, gen, transceiver, executor_version, requests,
                                            output_len)) from None
    dep = scen.deployment
    job = ServingJob(DisaggPeers("ctx", dep.ctx, "gen", dep.gen), scen.kv, scen.workload,
                     scen.executor, scen.transceiver, scen.seed)
    out = run_ranks([InstanceLayout("ctx", "ctx", dep.ctx), InstanceLayout("gen", "gen", dep.gen)],
                    serving_program, (job,), LaunchConfig("inproc", "strict", scen.seed))
    roles = ["ctx"] * dep.ctx.world_size + ["gen"] * dep.gen.world_size
    if out.error is not None:
        raise CensusRunFailed(str(out.error).splitlines()[0].removeprefix("RankFailed: "),
                              failing_role(out.error, roles))
    return Census.from_ranks(out.census, roles), out.results


def count_calls(census: Census, reports, role: str, inst: InstanceConfig,
                requests: int) -> CensusCount:
    """The role's calls per rank in the iterations where its instance forwarded a batch, by
    (label, group kind, group size, how the members meet)."""
    forward = {s.iteration for r in reports if r.role == role for s in r.stats if s.batch}
    ranks = max(1, sum(r.role == role for r in reports))
    rows = [r for r in census.select(role=role) if r.iteration in forward and r.kind != "p2p"
            and r.label not in INIT_LABELS]
    tp_labels = {(r.rank, r.iteration, r.label) for r in rows if r.kind == "tp"}
    calls: dict[tuple, float] = defaultdict(float)
    for r in rows:
        size = inst.layout.group_size(r.kind)
        if size <= 1:
            continue
        if r.label in ROOTED_LABELS:
            meet = "rooted"
        elif r.label in ALIGNED_LABELS or (r.kind == "pp" and (r.rank, r.iteration, r.label)
                                           in tp_labels):
            meet = "aligned"             # e.g. the PP consensus right after the TP one
        else:
            meet = "sync"
        calls[(r.label, r.kind, size, meet)] += r.count / ranks
    return CensusCount(len(forward), requests, dict(calls))


def _collectives(rates: dict) -> HostCollectives:
    by_meet: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for (_, _, size, meet), calls in rates.items():
        if calls:
            by_meet[meet][size] += calls
    return HostCollectives(**{m: tuple(sorted(v.items())) for m, v in by_meet.items()})


def _rows(role: str, rates: dict) -> tuple[tuple, ...]:
    return tuple((role, *key, calls) for key, calls in sorted(rates.items()) if calls)


@functools.lru_cache(maxsize=64)
def measure_control_plane(ctx: InstanceConfig, gen: InstanceConfig,
                          transceiver: TransceiverConfig = TransceiverConfig(),
                          executor_version: str = "trtsim") -> ControlPlane:
    """Count host collectives per forward rank-iteration and per request of each role on
    trtsim's executor."""
    same = (loop_of(ctx), ctx.max_batch_size) == (loop_of(gen), gen.max_batch_size)
    runs = {}
    for role in ("ctx", "gen"):
        key = "ctx" if same else role
        if key not in runs:
            runs[key] = [(census_run(ctx, gen, transceiver, executor_version, key, n, osl), n)
                         for n, osl in CENSUS_WORKLOADS]
    fits = {role: fit_rates([count_calls(census, reports, role, inst, n)
                             for (census, reports), n in runs["ctx" if same else role]])
            for role, inst in (("ctx", ctx), ("gen", gen))}
    (ci, cr), (gi, gr) = fits["ctx"], fits["gen"]
    return ControlPlane(ctx=_collectives(ci), gen=_collectives(gi),
                        ctx_per_request=_collectives(cr), gen_per_request=_collectives(gr),
                        detail=_rows("ctx", ci) + _rows("gen", gi),
                        detail_per_request=_rows("ctx", cr) + _rows("gen", gr),
                        source=f"executor {executor_version}, transceiver {transceiver.version}, "
                               f"sticky_skip {transceiver.sticky_skip}")
