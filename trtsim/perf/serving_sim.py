"""Cluster-scale serving simulation: the serving benchmark against ctx and gen servers.

An event-driven model at instance granularity (so a thousand requests over dozens of ranks
simulate in seconds), fed by two measured or sourced inputs:
- the per-layer roofline of ``CostModel`` (prefill, MTP verify and draft, KV transfer);
- the control plane of the real executor: how many host-object collectives each role issues
  per iteration, counted by running trtsim's own PyExecutor on the same layouts (the census),
  each priced from the host-collective measurement (``host_collectives``), on the host path of
  an iteration that is GPU-bound or host-bound with or without overlap (``iteration``).
The client keeps ``concurrency`` requests in flight (closed loop) until ``num_prompts`` have
been sent (TensorRT-LLM's benchmark scripts send concurrency x multi_round prompts in one run),
and the metrics are the serving benchmark's over the run. A context server runs one prefill
batch at a time (``max_batch_size`` / ``max_num_tokens`` per DP rank); its pipeline with PP > 1
drains every iteration under blocking consensus (the stages rendezvous in the pp_allgather) and
stays full under the asynchronous ring. A generation server runs one batch per iteration. The
census's per-iteration calls are priced on every forward iteration, its per-request calls on
the iteration that admits a request (generation) or prefills it (context).
``PerfConfig.price_quantile`` reads every host price at the low, central or high end of its
measured uncertainty: three runs give a prediction and its band.
"""

from __future__ import annotations

import functools
import heapq
import random
from dataclasses import dataclass, field

from . import comm_cost as cc
from .acceptance import emitted
from .client import RequestRecord, serving_metrics
from .hardware import get_hardware
from .iteration import HostPath, HostPrices, IterationTime, iteration_time
from .models import get_model
# the configuration lives in perf_config; its names are re-exported for the simulation's users
from .perf_config import BenchmarkConfig, ControlPlane, InstanceConfig, PerfConfig  # noqa: F401
from .roofline import CostModel, RequestGroup


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
        # memoised per instance: the same shapes recur thousands of times in a run
        for name in ("gen_step", "gen_iteration", "prefill", "prefill_stages", "transfer",
                     "host_path"):
            setattr(self, name, functools.lru_cache(maxsize=None)(getattr(self, name)))

    def host_path(self, role: str, requests: int, host_work_s: float) -> HostPath:
        """The role's collectives in an iteration with ``requests`` request events."""
        c = self.cfg.control
        colls = getattr(c, role).plus(getattr(c, f"{role}_per_request"), requests)
        return self.prices.host_path(colls, host_work_s)

    def gen_step(self, batch: int, kv_bucket: int) -> float:
        return self.gen.generation_step_time(batch, kv_bucket, self.k)

    def gen_iteration(self, batch: int, kv_bucket: int, waiting: int,
                      admitted: int = 0) -> IterationTime:
        """A generation iteration: the roofline step (plus the eager worker's extra time,
        measured on the GPU timeline with CUDA events) against the host path."""
        g = self.cfg.gen
        work = g.host_work_ms * 1e-3 + self.gen.transceiver_poll_time(waiting)
        return iteration_time(self.gen_step(batch, kv_bucket) + self.cfg.worker_step_overhead_s,
                              work, self.host_path("gen", admitted, work),
                              g.layout.pp_size == 1 and not g.disable_overlap_scheduler)

    def ctx_iteration(self, per_rank: int, requests: int) -> tuple[IterationTime, float, float]:
        """A prefill iteration: (its time, the stages' serial GPU time, the part of it a full
        pipeline hides)."""
        c, isl = self.cfg.ctx, self.cfg.benchmark.input_length
        tokens = per_rank * isl
        if c.layout.pp_size > 1:
            stages = self.prefill_stages(tokens, per_rank)
            serial = sum(stages)          # blocking consensus: the pipeline drains
            hidden = serial - max(stages) if self.cfg.async_consensus else 0.0
        else:
            serial, hidden = self.prefill(tokens, per_rank), 0.0
        work = c.host_work_ms * 1e-3 + self.tx.prepare_s * per_rank
        step = iteration_time(serial - hidden, work, self.host_path("ctx", requests, work),
                              c.layout.pp_size == 1 and not c.disable_overlap_scheduler)
        return step, serial, hidden

    def prefill(self, tokens: int, requests: int) -> float:
        return self.ctx.prefill_time(tokens, requests)

    def prefill_stages(self, tokens: int, requests: int) -> tuple[float, ...]:
        g = [RequestGroup(requests, tokens / requests, 0.0, 1, context=True)]
        return tuple(self.ctx.stage_time(s, g) for s in range(self.ctx.layout.pp_size))

    def transfer(self, tokens: int) -> float:
        return self.ctx.kv_transfer_time(tokens, self.gen.layout)


def simulate(cfg: PerfConfig) -> SimResult:
    """Run the benchmark: the serving metrics over the run, where the time went per term
    (``{role}_gpu/_host_work/_latency/_wait/_overlap``: each step = gpu + host work + latency
    + wait - overlap), and the servers' steps."""
    models = _Models(cfg)
    breakdown: dict[str, float] = {}
    events: list[tuple] = []

    def add(term: str, seconds: float) -> None:
        breakdown[term] = breakdown.get(term, 0.0) + seconds

    records, gen_steps = _run(cfg, models, random.Random(cfg.seed), add, events)
    for step, n in gen_steps.items():
        for term, value in (("gen_gpu", step.gpu_s),
                            ("gen_compute", step.gpu_s - cfg.worker_step_overhead_s),
                            ("gen_worker_overhead", cfg.worker_step_overhead_s),
                            ("gen_host_work", step.host_work_s), ("gen_latency", step.latency_s),
                            ("gen_wait", step.wait_s), ("gen_overlap", step.overlap_s),
                            ("gen_control_plane", step.collectives_s), ("gen_steps", 1),
                            ("gen_host_bound_steps", step.bound == "host")):
            add(term, n * value)
    return SimResult(serving_metrics(records), records, breakdown, events)


def _ctx_step(cfg, models, take, add) -> float:
    """One prefill batch on a context server: its step time, every term added."""
    per_rank = max(1, -(-len(take) // cfg.ctx.layout.dp_size))
    step, serial, hidden = models.ctx_iteration(per_rank, len(take))
    for term, value in (("ctx_gpu", serial), ("ctx_compute", step.gpu_s),
                        ("ctx_host_work", step.host_work_s), ("ctx_latency", step.latency_s),
                        ("ctx_wait", step.wait_s), ("ctx_overlap", hidden + step.overlap_s),
                        ("ctx_control_plane", step.collectives_s), ("ctx_steps", 1)):
        add(term, value)
    return step.step_s


def _run(cfg, models, rng, add, events):
    """The benchmark's run of ``num_prompts`` requests at ``concurrency``: (records, each
    distinct generation step and how often it ran)."""
    return _Simulation(cfg, models, rng, add, events).run()


class _Simulation:
    """One benchmark run as discrete events on a heap of (time, order, kind, payload): ``ctx``
    (a context server's next prefill batch), ``kv`` (a request's KV cache reaches its
    generation server), ``gen`` (a generation server's next step). ``order`` breaks time ties
    in push order, so the run is deterministic in the seed."""

    def __init__(self, cfg, models, rng, add, events):
        self.cfg, self.models, self.rng, self.add, self.events = cfg, models, rng, add, events
        bench = self.bench = cfg.benchmark
        self.records = [RequestRecord(0.0, bench.input_length, 0)
                        for _ in range(bench.num_prompts)]
        self.heap: list[tuple] = []
        self.order = 0
        self.gen_steps: dict[IterationTime, int] = {}
        self.next_request = 0
        self.ctx_queue: list[list[int]] = [[] for _ in range(cfg.ctx.servers)]
        self.ctx_busy = [False] * cfg.ctx.servers
        self.gen_active: list[list[int]] = [[] for _ in range(cfg.gen.servers)]
        self.gen_waiting: list[list[int]] = [[] for _ in range(cfg.gen.servers)]
        self.gen_busy = [False] * cfg.gen.servers
        self.nic_free = [0.0] * cfg.gen.servers
        self.kv_len: dict[int, int] = {}

    def run(self):
        for _ in range(min(self.bench.concurrency, self.bench.num_prompts)):
            self.send(0.0)
        handlers = {"ctx": self.on_ctx, "kv": self.on_kv, "gen": self.on_gen}
        while self.heap:
            t, _, kind, payload = heapq.heappop(self.heap)
            handlers[kind](t, payload)
        return self.records, self.gen_steps

    def push(self, t, kind, payload) -> None:
        self.order += 1
        heapq.heappush(self.heap, (t, self.order, kind, payload))

    def send(self, t) -> None:
        rid = self.next_request
        self.next_request += 1
        self.records[rid].send = t
        server = rid % self.cfg.ctx.servers
        self.ctx_queue[server].append(rid)
        if not self.ctx_busy[server]:     # one prefill batch at a time per context server
            self.ctx_busy[server] = True
            self.push(t, "ctx", server)

    def on_ctx(self, t, server) -> None:
        queue, isl = self.ctx_queue[server], self.bench.input_length
        if not queue:
            self.ctx_busy[server] = False
            return
        take = _ctx_batch(self.cfg.ctx, queue, isl)
        del queue[:len(take)]
        done = t + _ctx_step(self.cfg, self.models, take, self.add)
        self.events.append((f"ctx{server}", t, done, "prefill"))
        for rid in take:
            gsrv = rid % self.cfg.gen.servers
            arrive = max(done, self.nic_free[gsrv]) + self.models.transfer(isl)
            self.nic_free[gsrv] = arrive
            self.add("kv_transfer", arrive - done)
            self.push(arrive, "kv", (gsrv, rid))
        self.push(done, "ctx", server)

    def on_kv(self, t, payload) -> None:
        gsrv, rid = payload
        self.gen_waiting[gsrv].append(rid)
        self.kv_len[rid] = self.bench.input_length
        if not self.gen_busy[gsrv]:
            self.gen_busy[gsrv] = True
            self.push(t, "gen", gsrv)

    def on_gen(self, t, gsrv) -> None:
        gen = self.cfg.gen
        active, waiting = self.gen_active[gsrv], self.gen_waiting[gsrv]
        admitted = 0
        while waiting and len(active) < gen.max_batch_size * gen.layout.dp_size:
            active.append(waiting.pop(0))
            admitted += 1
        if not active:
            self.gen_busy[gsrv] = False
            return
        per_rank = max(1, -(-len(active) // gen.layout.dp_size))
        mean_kv = sum(self.kv_len[r] for r in active) / len(active)
        step = self.models.gen_iteration(per_rank, int(mean_kv) // 64 * 64 + 64, len(waiting),
                                         admitted)
        self.gen_steps[step] = self.gen_steps.get(step, 0) + 1
        step_end = t + step.step_s
        self.events.append((f"gen{gsrv}", t, step_end, "generation"))
        for rid in self.emit(active, step_end):
            active.remove(rid)
            if self.next_request < self.bench.num_prompts:
                self.send(step_end)
        self.push(step_end, "gen", gsrv)

    def emit(self, active: list[int], step_end: float) -> list[int]:
        """Each active request's tokens of one generation step; the requests it finishes."""
        bench, finished = self.bench, []
        for rid in active:
            rec = self.records[rid]
            if rec.first_token is None:            # the context's token arrives with the KV
                rec.first_token, rec.output_len = step_end, 1
                if rec.output_len >= bench.output_length:
                    finished.append(rid)
                continue
            n = min(emitted(self.rng, self.cfg.acceptance), bench.output_length - rec.output_len)
            rec.output_len += n
            rec.steps += 1
            self.kv_len[rid] += n
            if rec.output_len >= bench.output_length or (
                    bench.streaming and rec.steps % bench.stream_interval == 0):
                rec.chunks.append(step_end)
            if rec.output_len >= bench.output_length:
                finished.append(rid)
        return finished


def _ctx_batch(inst: InstanceConfig, queue: list[int], isl: int) -> list[int]:
    """Requests one context iteration takes: per DP rank up to max_batch_size and
    max_num_tokens (at least one)."""
    per_rank = max(1, min(inst.max_batch_size, inst.max_num_tokens // isl))
    return queue[:per_rank * inst.layout.dp_size]
