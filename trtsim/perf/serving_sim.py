"""Cluster-scale serving simulation: the serving benchmark against ctx and gen servers.

An event-driven model at instance granularity (so a thousand requests over dozens of ranks
simulate in seconds), fed by two measured or sourced inputs:
- the per-layer roofline of ``CostModel`` (prefill, MTP verify and draft, KV transfer);
- the control plane of the real executor: how many host-object collectives each role issues
  per iteration, counted by running trtsim's own PyExecutor on the same layouts (the census),
  each priced from the host-collective measurement (``host_collectives``), on the host path of
  an iteration that is GPU-bound or host-bound with or without overlap (``iteration``).
The client keeps ``concurrency`` requests in flight (closed loop) for ``multi_round`` rounds
of ``num_prompts``; metrics are computed per round and averaged, as the benchmark reports a
round. The context pipeline with PP > 1 drains every iteration under blocking consensus (the
stages rendezvous in the pp_allgather) and stays full under the asynchronous ring.
``PerfConfig.price_quantile`` reads every host price at the low (p10), central (mean) or high
(p90) end of its measured spread: three runs give a prediction and its band.
"""

from __future__ import annotations

import functools
import heapq
import random
from dataclasses import dataclass, field

from ..checks import MAX_RANKS, MAX_REQUEST_TOKENS, MAX_REQUESTS, require_at_most, require_ints
from ..layout.parallel import ParallelLayout
from . import comm_cost as cc
from .client import RequestRecord, serving_metrics
from .hardware import get_hardware
from .host_collectives import QUANTILES
from .iteration import HostCollectives, HostPrices, IterationTime, iteration_time
from .models import get_model
from .roofline import CostModel, RequestGroup


@dataclass(frozen=True)
class InstanceConfig:
    """One role's servers: how many, and each one's layout and batch limits."""

    servers: int = field(default=1, metadata={"help": "servers of this role"})
    layout: ParallelLayout = field(default_factory=ParallelLayout, metadata={"flatten": True})
    max_batch_size: int = field(default=8, metadata={"help": "requests per forward per DP rank"})
    max_num_tokens: int = field(default=8192, metadata={"help": "tokens per forward per DP rank"})
    disable_overlap_scheduler: bool = field(default=False, metadata={
        "help": "TRT-LLM's worker option: false (its default) overlaps the host's work for the "
                "next iteration with the GPU's forward"})
    host_work_ms: float = field(default=0.0, metadata={
        "help": "host work of one executor iteration besides the counted collectives (ms): "
                "sourced per scenario, 0 where no source says"})

    def __post_init__(self) -> None:
        require_ints(self, "servers", "max_batch_size", "max_num_tokens")
        gpus = self.servers * self.layout.world_size
        if gpus > MAX_RANKS:
            raise ValueError(f"servers={self.servers}: {self.servers:,} servers of "
                             f"{self.layout.world_size} GPUs, more than the limit of "
                             f"{MAX_RANKS:,} GPUs")
        if isinstance(self.host_work_ms, bool) or not isinstance(self.host_work_ms, (int, float)) \
                or not 0 <= self.host_work_ms < 1e4:
            raise ValueError(f"host_work_ms={self.host_work_ms!r} must be a number of ms >= 0")


@dataclass(frozen=True)
class BenchmarkConfig:
    """The serving benchmark's client."""

    concurrency: int = 16
    num_prompts: int = 128
    multi_round: int = 1
    input_length: int = 1024
    output_length: int = 128
    streaming: bool = True
    stream_interval: int = 1          # generation steps per streamed chunk (the server's knob)

    def __post_init__(self) -> None:
        require_ints(self, "concurrency", "num_prompts", "multi_round", "input_length",
                     "output_length", "stream_interval")
        if self.num_prompts * self.multi_round > MAX_REQUESTS:
            raise ValueError(f"num_prompts={self.num_prompts}: {self.num_prompts:,} prompts x "
                             f"{self.multi_round} rounds, more than the limit of "
                             f"{MAX_REQUESTS:,} requests")
        require_at_most("concurrency", self.concurrency, MAX_REQUESTS, "requests")
        for name in ("input_length", "output_length"):
            require_at_most(name, getattr(self, name), MAX_REQUEST_TOKENS, "tokens")


@dataclass(frozen=True)
class ControlPlane:
    """Host collectives per forward iteration of a rank of each role, and what was counted."""

    ctx: HostCollectives = HostCollectives()
    gen: HostCollectives = HostCollectives()
    source: str = ""
    detail: tuple = ()      # (role, label, group kind, group size, sync | aligned | rooted,
    #                         calls per forward rank-iteration)

    def table(self) -> str:
        """A header, then one line per counted call: role, label, group, how the members
        meet, calls per forward rank-iteration."""
        rows = [("role", "label", "group", "size", "meet", "calls")] + [
            (role, label, kind, f"{size} ranks", meet, f"{calls:.3f}")
            for role, label, kind, size, meet, calls in self.detail]
        return "\n".join(f"  {a:<4} {b:<20} {c:<6} {d:>9}  {e:<8} {f:>6}" for a, b, c, d, e, f
                         in rows)


@dataclass(frozen=True)
class PerfConfig:
    """Everything the simulation needs (built from a perf scenario)."""

    hardware: str
    model: str
    ctx: InstanceConfig
    gen: InstanceConfig
    benchmark: BenchmarkConfig
    max_draft_len: int = 0
    acceptance: float = 0.0
    runtime: str = "cpp"                 # transceiver runtime: python | cpp
    async_consensus: bool = False
    worker_step_overhead_s: float = 0.0  # incident 5.1: eager instead of graph-replayed steps
    control: ControlPlane = ControlPlane()
    host_backend: str = "mpi"            # TRT-LLM's host collectives run over MPI
    price_quantile: str = "central"      # low (p10) | central (mean) | high (p90) host prices
    seed: int = 0

    def __post_init__(self) -> None:
        get_hardware(self.hardware)
        get_model(self.model)
        if self.runtime not in ("python", "cpp"):
            raise ValueError(f"runtime={self.runtime!r}; expected python or cpp")
        if not 0 <= self.acceptance < 1:
            raise ValueError(f"acceptance={self.acceptance!r} must be in [0, 1)")
        if self.price_quantile not in QUANTILES:
            raise ValueError(f"price_quantile={self.price_quantile!r}; expected one of "
                             f"{', '.join(QUANTILES)}")


@dataclass
class SimResult:
    metrics: dict
    records: list[RequestRecord]
    breakdown: dict = field(default_factory=dict)     # seconds per cost term, summed
    events: list[tuple] = field(default_factory=list)  # (server, start, end, kind) for traces


class _Models:
    """Cost models of the two roles, with the step times memoised by bucket."""

    def __init__(self, cfg: PerfConfig):
        hw, model = get_hardware(cfg.hardware), get_model(cfg.model)
        tx = cc.PYTHON_TRANSCEIVER if cfg.runtime == "python" else cc.CPP_TRANSCEIVER
        self.tx = tx
        self.ctx = CostModel(hw, model, cfg.ctx.layout, transceiver=tx)
        self.gen = CostModel(hw, model, cfg.gen.layout, transceiver=tx)
        self.k = cfg.max_draft_len
        self.cfg = cfg
        self.prices = HostPrices(cfg.host_backend, cfg.price_quantile)
        # the collectives' price per forward iteration of each role (its host work is fixed)
        self.ctrl = {role: self.prices.collectives_s(getattr(cfg.control, role),
                                                     getattr(cfg, role).host_work_ms * 1e-3)
                     for role in ("ctx", "gen")}
        # memoised per instance: the same shapes recur thousands of times in a run
        for name in ("gen_step", "gen_iteration", "prefill", "prefill_stages", "transfer"):
            setattr(self, name, functools.lru_cache(maxsize=None)(getattr(self, name)))

    def gen_step(self, batch: int, kv_bucket: int) -> float:
        return self.gen.generation_step_time(batch, kv_bucket, self.k)

    def gen_iteration(self, batch: int, kv_bucket: int, waiting: int) -> IterationTime:
        """A generation iteration: the roofline step (plus the eager worker's extra time,
        measured on the GPU timeline with CUDA events) against the host path."""
        g = self.cfg.gen
        return iteration_time(self.gen_step(batch, kv_bucket) + self.cfg.worker_step_overhead_s,
                              g.host_work_ms * 1e-3 + self.gen.transceiver_poll_time(waiting),
                              self.ctrl["gen"],
                              g.layout.pp_size == 1 and not g.disable_overlap_scheduler)

    def prefill(self, tokens: int, requests: int) -> float:
        return self.ctx.prefill_time(tokens, requests)

    def prefill_stages(self, tokens: int, requests: int) -> tuple[float, ...]:
        g = [RequestGroup(requests, tokens / requests, 0.0, 1, context=True)]
        return tuple(self.ctx.stage_time(s, g) for s in range(self.ctx.layout.pp_size))

    def transfer(self, tokens: int) -> float:
        return self.ctx.kv_transfer_time(tokens, self.gen.layout)


def simulate(cfg: PerfConfig) -> SimResult:
    """Run the benchmark; metrics per round, averaged over the rounds."""
    models = _Models(cfg)
    bench = cfg.benchmark
    rng = random.Random(cfg.seed)
    breakdown: dict[str, float] = {}
    events: list[tuple] = []

    def add(term: str, seconds: float) -> None:
        breakdown[term] = breakdown.get(term, 0.0) + seconds

    now = 0.0
    rounds = []
    gen_steps: dict[IterationTime, int] = {}       # each distinct generation step, how often
    for _ in range(bench.multi_round):
        records, now = _round(cfg, models, rng, now, add, events, gen_steps)
        rounds.append(serving_metrics(records))
    for step, n in gen_steps.items():
        for term, value in (("gen_compute", step.gpu_s - cfg.worker_step_overhead_s),
                            ("gen_worker_overhead", cfg.worker_step_overhead_s),
                            ("gen_host_work", step.host_work_s),
                            ("gen_control_plane", step.collectives_s), ("gen_steps", 1),
                            ("gen_host_bound_steps", step.bound == "host")):
            add(term, n * value)
    metrics = {k: sum(r[k] for r in rounds) / len(rounds) for k in rounds[0]}
    metrics["completed"] = sum(r["completed"] for r in rounds)
    return SimResult(metrics, records, breakdown, events)


def _emitted(rng: random.Random, k: int, alpha: float) -> int:
    """Tokens one MTP step emits: 1 + the accepted prefix of K drafts (i.i.d. alpha)."""
    n = 1
    while n <= k and rng.random() < alpha:
        n += 1
    return n


def _round(cfg, models, rng, start, add, events, gen_steps):
    """One round of ``num_prompts`` requests at ``concurrency``; returns records and end."""
    bench, k = cfg.benchmark, cfg.max_draft_len
    records = [RequestRecord(0.0, bench.input_length, 0) for _ in range(bench.num_prompts)]
    heap: list[tuple] = []                  # (time, order, kind, payload)
    order = 0

    def push(t, kind, payload):
        nonlocal order
        order += 1
        heapq.heappush(heap, (t, order, kind, payload))

    next_request = 0
    ctx_queue: list[list[int]] = [[] for _ in range(cfg.ctx.servers)]
    ctx_busy = [False] * cfg.ctx.servers
    gen_active: list[list[int]] = [[] for _ in range(cfg.gen.servers)]
    gen_waiting: list[list[int]] = [[] for _ in range(cfg.gen.servers)]
    gen_busy = [False] * cfg.gen.servers
    nic_free = [start] * cfg.gen.servers
    kv_len: dict[int, int] = {}

    def send(t):
        nonlocal next_request
        rid = next_request
        next_request += 1
        records[rid].send = t
        server = rid % cfg.ctx.servers
        ctx_queue[server].append(rid)
        if not ctx_busy[server]:
            push(t, "ctx", server)

    for _ in range(min(bench.concurrency, bench.num_prompts)):
        send(start)
    end = start
    while heap:
        t, _, kind, payload = heapq.heappop(heap)
        end = max(end, t)
        if kind == "ctx":
            server = payload
            queue = ctx_queue[server]
            if not queue:
                ctx_busy[server] = False
                continue
            ctx_busy[server] = True
            take = _ctx_batch(cfg.ctx, queue, bench.input_length)
            del queue[:len(take)]
            per_rank = max(1, -(-len(take) // cfg.ctx.layout.dp_size))
            tokens = per_rank * bench.input_length
            if cfg.ctx.layout.pp_size > 1 and not cfg.async_consensus:
                compute = sum(models.prefill_stages(tokens, per_rank))   # drained pipeline
            elif cfg.ctx.layout.pp_size > 1:
                compute = max(models.prefill_stages(tokens, per_rank))   # full pipeline
            else:
                compute = models.prefill(tokens, per_rank)
            step = iteration_time(compute, cfg.ctx.host_work_ms * 1e-3 + models.tx.prepare_s
                                  * per_rank, models.ctrl["ctx"], cfg.ctx.layout.pp_size == 1
                                  and not cfg.ctx.disable_overlap_scheduler)
            add("ctx_compute", compute)
            add("ctx_host_work", step.host_work_s)
            add("ctx_control_plane", step.collectives_s)
            done = t + step.step_s
            events.append((f"ctx{server}", t, done, "prefill"))
            for rid in take:
                gsrv = rid % cfg.gen.servers
                arrive = max(done, nic_free[gsrv]) + models.transfer(bench.input_length)
                nic_free[gsrv] = arrive
                add("kv_transfer", arrive - done)
                push(arrive, "kv", (gsrv, rid))
            push(done, "ctx", server)
        elif kind == "kv":
            gsrv, rid = payload
            gen_waiting[gsrv].append(rid)
            kv_len[rid] = bench.input_length
            if not gen_busy[gsrv]:
                gen_busy[gsrv] = True
                push(t, "gen", gsrv)
        elif kind == "gen":
            gsrv = payload
            active, waiting = gen_active[gsrv], gen_waiting[gsrv]
            while waiting and len(active) < cfg.gen.max_batch_size * cfg.gen.layout.dp_size:
                active.append(waiting.pop(0))
            if not active:
                gen_busy[gsrv] = False
                continue
            per_rank = max(1, -(-len(active) // cfg.gen.layout.dp_size))
            mean_kv = sum(kv_len[r] for r in active) / len(active)
            step = models.gen_iteration(per_rank, int(mean_kv) // 64 * 64 + 64, len(waiting))
            gen_steps[step] = gen_steps.get(step, 0) + 1
            step_end = t + step.step_s
            events.append((f"gen{gsrv}", t, step_end, "generation"))
            finished = []
            for rid in active:
                rec = records[rid]
                if rec.first_token is None:        # the context's token arrives with the KV
                    rec.first_token, rec.output_len = step_end, 1
                    if rec.output_len >= bench.output_length:
                        finished.append(rid)
                    continue
                n = min(_emitted(rng, k, cfg.acceptance), bench.output_length - rec.output_len)
                rec.output_len += n
                rec.steps += 1
                kv_len[rid] += n
                if rec.output_len >= bench.output_length or (
                        bench.streaming and rec.steps % bench.stream_interval == 0):
                    rec.chunks.append(step_end)
                if rec.output_len >= bench.output_length:
                    finished.append(rid)
            for rid in finished:
                active.remove(rid)
                if next_request < bench.num_prompts:
                    send(step_end)
            push(step_end, "gen", gsrv)
    return records, end


def _ctx_batch(inst: InstanceConfig, queue: list[int], isl: int) -> list[int]:
    """Requests one context iteration takes: per DP rank up to max_batch_size and
    max_num_tokens (at least one)."""
    per_rank = max(1, min(inst.max_batch_size, inst.max_num_tokens // isl))
    return queue[:per_rank * inst.layout.dp_size]
