"""trtsim.run: a scenario on a backend -> verdict, report, metrics, census, verified KV."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable

from ..calls.errors import CollectiveError, verdict_of
from ..guard.lockstep import summarize
from ..comm.latent_gate import LatentGate
from ..comm.launch_config import LaunchConfig
from ..comm.outcome import LaunchOutcome
from ..backends.counterexample import written_flips
from ..backends.external.job_ending import JobVerdict
from ..backends.external.torchrun import RETURNS
from ..backends.gate_flip import explain_flip, flip_all
from ..backends.run_ranks import run_ranks
from ..disagg.transceiver_config import DisaggPeers
from ..executor.report import ExecutorReport
from ..launching import default_clock_model
from ..layout.places import InstanceLayout, rank_places, ranks_label
from ..scenario.functional import Scenario, TransferWorkload, load_scenario
from ..timeline.trace import rank_trace
from .census import Census
from .scenario_flip import write_scenario_flip
from .serving_job import ServingJob, serving_program
from .transfer_job import (TransferJob, TransferReport, completed_everywhere, transfer_program,
                           verify_transfer)


# trtsim's runtime wings run as the rank program of a scenario: a flip controls their gates
PROGRAM_CODE = ("trtsim.executor", "trtsim.disagg", "trtsim.spec", "trtsim.jobs")


@dataclass
class RunResult:
    """What a scenario run found."""

    scenario: Scenario
    verdict: str
    error: CollectiveError | None
    metrics: dict[str, Any]
    census: Census
    kv_verified: bool | None
    divergence: list[dict]
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)   # KV verification failures
    wall_s: float = 0.0
    trace: list = field(default_factory=list)   # (scheduler step, CallRecord), with trace=True
    timeline: list = field(default_factory=list)  # per rank: virtual-time events
    latent: list = field(default_factory=list)    # LatentGate (gates: observe or flip)
    absorbed: list = field(default_factory=list)  # LatentGate flipped with no report (flip)

    @property
    def holds(self) -> bool:
        """The verdict is the one the scenario expects (``ok`` unless it reproduces an
        incident) and no transferred block differs from its source."""
        return self.verdict == self.scenario.expect and self.kv_verified is not False

    def to_dict(self, census_rows: bool = False) -> dict:
        """JSON-ready (docs/JSON.md): the census summarized per (role, kind, label), or
        every (rank, iteration) row with ``census_rows``."""
        return {"kind": self.scenario.kind, "scenario": self.scenario.name,
                "source": self.scenario.source,
                "backend": self.scenario.backend, "guard": self.scenario.guard,
                "verdict": self.verdict, "expect": self.scenario.expect, "holds": self.holds,
                "kv_verified": self.kv_verified,
                "error": self.error.to_dict() if self.error else None,
                "metrics": self.metrics, "divergence": self.divergence, "notes": self.notes,
                "problems": self.problems, "census": self.census.summary(),
                "latent": [g.to_dict() for g in self.latent],
                "absorbed": [g.to_dict() for g in self.absorbed],
                **({"census_rows": self.census.to_dict()} if census_rows else {}),
                "wall_s": self.wall_s}

    def trace_events(self) -> dict:
        """The run's per-rank virtual-time timeline as a Perfetto trace: a process per
        instance, a thread per rank (named as reports name it), an instant where the guard
        stopped each rank its report names."""
        dep = self.scenario.deployment
        places = rank_places([InstanceLayout("ctx", "ctx", dep.ctx),
                              InstanceLayout("gen", "gen", dep.gen)])
        tracks = [(p.instance, p.name) for p in places]
        marks = []
        if self.error is not None and self.timeline:
            for rank in sorted(set(self.error.calls) | set(self.error.ranks)):
                rec = self.error.calls.get(rank)
                args = {"report": self.error.summary}
                if rec is not None:
                    args["call"] = rec.short()
                    args["callsite"] = rec.callsite
                if 0 <= rank < len(self.timeline):
                    marks.append((rank, f"guard: {self.verdict}", args))
        return rank_trace(self.timeline, tracks, marks)

    def summary(self) -> str:
        s = self.scenario
        dep = s.deployment
        verdict = f"verdict: {self.verdict}"
        if s.expect != "ok":
            verdict += f" (expected: {s.expect}: {'reproduced' if self.verdict == s.expect else 'NOT reproduced'})"
        if self.kv_verified is not None:
            verdict += f", kv verified: {self.kv_verified}"
        lines = [f"{s.name}: {dep.id} (ctx {dep.ctx.describe()}, gen {dep.gen.describe()}), "
                 f"backend {s.backend}, guard {s.guard}, seed {s.seed}", verdict]
        lines += [g.line() for g in self.latent]
        lines += [f"absorbed: {g.line()}" for g in self.absorbed]
        lines += [f"note: {n}" for n in self.notes]
        for d in self.divergence[:8]:
            times = f" (and in {d['iterations'] - 1} later iterations)" if d["iterations"] > 1 else ""
            what = f"{d['kind']} group"
            entered = ranks_label(d["instance"], d["group_ranks"], d["offset"], what)
            skipped = ranks_label(d["instance"], d["other_ranks"], d["offset"], what)
            lines.append(f"divergence (legal per group): {entered} entered {d['kind']}_{d['op']} "
                         f"{d['label']!r} in iteration {d['iteration']}{times}, {skipped} did not")
        if len(self.divergence) > 8:
            lines.append(f"... {len(self.divergence) - 8} more divergences")
        lines += [f"kv problem: {p}" for p in self.problems[:8]]
        if self.metrics:
            lines.append("metrics: " + ", ".join(f"{k}={_fmt(v)}" for k, v in self.metrics.items()))
        if self.error is not None:
            lines.append(str(self.error))
        return "\n".join(lines)


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def run(scenario, backend: str | None = None, overrides: dict | None = None,
        progress: Callable[[str], None] | None = None, trace: bool = False,
        out_dir: str | None = None) -> RunResult:
    """Run a scenario (path, mapping or Scenario) and judge it. ``trace`` keeps every call
    of an inproc run (``RunResult.trace``) for timelines. With ``gates: flip``, each flip that
    gave a report is written into ``out_dir`` (default: the user's cache folder,
    ``trtsim/flips``) as a scenario that replays it (``LatentGate.counterexample``). Under
    torchrun the run is one job with one report: rank 0 returns the result, once every other
    rank has left the job (status 0, printing nothing) inside this call
    (``backends.external.job_ending``)."""
    overrides = dict(overrides or {})
    if backend is not None:
        overrides["backend"] = backend
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario, overrides)
    elif overrides:
        scenario = load_scenario(scenario.raw, overrides)
    s = scenario
    dep = s.deployment
    peers = DisaggPeers("ctx", dep.ctx, "gen", dep.gen)
    instances = [InstanceLayout("ctx", "ctx", dep.ctx), InstanceLayout("gen", "gen", dep.gen)]
    if isinstance(s.workload, TransferWorkload):
        job = TransferJob(peers, s.kv, s.workload.requests, s.transceiver, s.seed, s.faults,
                          s.workload.dp_offset)
        program = transfer_program
    else:
        job = ServingJob(peers, s.kv, s.workload, s.executor, s.transceiver, s.seed, s.faults,
                         s.speculative)
        program = serving_program
    t0 = time.perf_counter()
    config = LaunchConfig(s.backend, s.guard, s.seed, s.timeout, s.delays, trace,
                          default_clock_model(), s.iteration_marker, s.wrappers, s.intercept,
                          gates=s.gates, gates_in=PROGRAM_CODE if s.gates == "flip" else (),
                          flip=s.flip)
    out = run_ranks(instances, program, (job,), config, progress=progress, one_report=RETURNS,
                    verdict=partial(_report_alone, s, job, t0))
    if s.flip is not None:                           # a flip's counterexample, replayed
        explain_flip(out.error, s.flip)
    latent, absorbed = out.latent, list[LatentGate]()
    if s.gates == "flip" and s.flip is None and out.error is None and latent:
        latent, absorbed = flip_all(instances, program, (job,), config, latent)
        latent = written_flips(latent, out_dir,
                               lambda gate, folder: write_scenario_flip(gate, folder, s))
    return _judged(s, job, out, latent, absorbed, time.perf_counter() - t0)


def _report_alone(s: Scenario, job, t0: float, report: CollectiveError) -> JobVerdict:
    """Under torchrun, where rank 0 is stuck inside a real call past a report (it cannot
    return): the verdict on the report alone, printed by rank 0 as it ends the job."""
    world = s.deployment.ctx.world_size + s.deployment.gen.world_size
    judged = _judged(s, job, LaunchOutcome([None] * world, report), [], [],
                     time.perf_counter() - t0)
    return JobVerdict(judged.summary(), 0 if judged.holds else 1)


def _judged(s: Scenario, job, out: LaunchOutcome, latent: list, absorbed: list,
            wall: float) -> RunResult:
    """The run's outcome judged: the verdict, KV verified against the sources, metrics."""
    dep = s.deployment
    n_ctx = dep.ctx.world_size
    roles = ["ctx"] * n_ctx + ["gen"] * dep.gen.world_size
    census = Census.from_ranks(out.census, roles)
    results = out.results
    problems: list[str] = []
    kv_verified = None
    metrics: dict[str, Any] = {}
    if all(r is not None for r in results):
        if isinstance(s.workload, TransferWorkload):
            kv_verified, problems = verify_transfer(job, results[:n_ctx], results[n_ctx:])
            metrics = _transfer_metrics(results, n_ctx)
        else:
            kv_verified, problems, metrics = _serving_metrics(results, n_ctx, s)
    return RunResult(s, verdict_of(out.error), out.error, metrics, census, kv_verified,
                     summarize(out.divergences), out.notes, problems, wall, out.trace,
                     out.clocks, latent, absorbed)


def _transfer_metrics(results: list[TransferReport], n_ctx: int) -> dict:
    gen = results[n_ctx:]
    return {"requests": len({rid for r in gen for rid in r.states}),
            "completed": len(completed_everywhere(gen)),
            "failed": len({x for r in results for x in r.failed}),
            "cancelled": len({x for r in results for x in r.cancelled}),
            "kv_bytes": sum(r.bytes for r in results[:n_ctx]),
            "skipped_checks": sum(r.skipped_checks for r in results)}


def _serving_metrics(results: list[ExecutorReport], n_ctx: int, s: Scenario):
    """Counts, iterations and acceptance; the time metrics come from the virtual clock."""
    ctx, gen = results[:n_ctx], results[n_ctx:]
    gen_done = list(gen[0].finished)
    completed = [f for f in gen_done if f.state == "generation_complete"]
    steps = sum(f.stamps.get("steps", 0) for f in completed)
    decoded = sum(max(0, f.generated - 1) for f in completed)
    mismatches = sorted({rid for r in gen for rid in r.kv_mismatches})
    verified = sum(r.kv_verified for r in gen)
    kv_ok = False if mismatches else (True if verified else None)
    metrics = {
        "requests": s.workload.num_requests,
        "completed": len(completed),
        "failed": sum(f.state == "disagg_trans_error" for f in gen_done),
        "cancelled": sum(f.state == "cancelled" for f in gen_done),
        "unfinished": len({rid for r in gen for rid in r.unfinished}),
        "ctx_iterations": max(r.iterations for r in ctx),
        "gen_iterations": max(r.iterations for r in gen),
        "output_tokens": sum(f.generated for f in completed),
        "avg_decoded_tokens_per_iter": decoded / steps if steps else 0.0,
        "kv_bytes": sum(r.kv_bytes for r in ctx),
        "skipped_checks": sum(r.skipped_checks for r in results),
    }
    return kv_ok, [f"request {rid}: received KV differs from the prefill" for rid in mismatches], metrics
