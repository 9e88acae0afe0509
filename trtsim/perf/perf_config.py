"""The serving simulation's configuration (frozen, validated on construction): each role's
servers, the benchmark's client, the control plane the census counted, and everything a run
needs (``PerfConfig``). ``serving_sim`` runs it; the scenario loader builds it."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..checks import MAX_RANKS, MAX_REQUEST_TOKENS, MAX_REQUESTS, require_at_most, require_ints
from ..layout.parallel import ParallelLayout
from .acceptance import check_rates
from .hardware import get_hardware
from .host_collectives import QUANTILES
from .iteration import HostCollectives
from .models import get_model


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


def _bench_help(text: str, default):
    return field(default=default, metadata={"help": text})


@dataclass(frozen=True)
class BenchmarkConfig:
    """The serving benchmark's client: one run of ``num_prompts`` at ``concurrency``."""

    concurrency: int = _bench_help("requests in flight (TRT-LLM's disaggregated scripts: the "
                                   "file's concurrency x its generation servers)", 16)
    num_prompts: int = _bench_help("prompts of the run (TRT-LLM's scripts: concurrency x "
                                   "multi_round)", 128)
    input_length: int = _bench_help("prompt tokens (ISL)", 1024)
    output_length: int = _bench_help("generated tokens per request (OSL)", 128)
    streaming: bool = _bench_help("stream chunks (ITL is measured between them)", True)
    stream_interval: int = _bench_help("generation steps per streamed chunk (the server's knob)",
                                       1)

    def __post_init__(self) -> None:
        require_ints(self, "concurrency", "num_prompts", "input_length", "output_length",
                     "stream_interval")
        for name, unit in (("num_prompts", "requests"), ("concurrency", "requests"),
                           ("input_length", "tokens"), ("output_length", "tokens")):
            require_at_most(name, getattr(self, name), MAX_REQUESTS if unit == "requests"
                            else MAX_REQUEST_TOKENS, unit)


@dataclass(frozen=True)
class ControlPlane:
    """Host collectives of a rank of each role: per forward iteration, and per request (the
    calls a request's transfer adds), with what was counted."""

    ctx: HostCollectives = HostCollectives()
    gen: HostCollectives = HostCollectives()
    ctx_per_request: HostCollectives = HostCollectives()
    gen_per_request: HostCollectives = HostCollectives()
    source: str = ""
    detail: tuple = ()      # (role, label, group kind, group size, sync | aligned | rooted,
    #                         calls per forward rank-iteration)
    detail_per_request: tuple = ()     # the same rows, calls per rank per request

    def table(self) -> str:
        """A header, then one line per counted call: role, label, group, how the members
        meet, calls per forward rank-iteration and per request."""
        per_iter = {row[:5]: row[5] for row in self.detail}
        per_request = {row[:5]: row[5] for row in self.detail_per_request}
        rows = [("role", "label", "group", "size", "meet", "/iter", "/request")] + [
            (role, label, kind, f"{size} ranks", meet, f"{per_iter.get(key, 0.0):.3f}",
             f"{per_request.get(key, 0.0):.3f}")
            for key in dict.fromkeys([*per_iter, *per_request])
            for role, label, kind, size, meet in [key]]
        return "\n".join(f"  {a:<4} {b:<20} {c:<6} {d:>9}  {e:<8} {f:>6} {g:>8}"
                         for a, b, c, d, e, f, g in rows)


@dataclass(frozen=True)
class PerfConfig:
    """Everything the simulation needs (built from a perf scenario)."""

    hardware: str
    model: str
    ctx: InstanceConfig
    gen: InstanceConfig
    benchmark: BenchmarkConfig
    max_draft_len: int = 0
    acceptance: tuple[float, ...] = ()   # per draft depth (trtsim.perf.acceptance)
    runtime: str = "cpp"                 # transceiver runtime: python | cpp
    async_consensus: bool = False
    worker_step_overhead_s: float = 0.0  # incident 5.1: eager instead of graph-replayed steps
    control: ControlPlane = ControlPlane()
    host_backend: str = "mpi"            # TRT-LLM's host collectives run over MPI
    price_quantile: str = "central"      # low | central | high end of the prices' uncertainty
    seed: int = 0

    def __post_init__(self) -> None:
        get_hardware(self.hardware)
        get_model(self.model)
        if self.runtime not in ("python", "cpp"):
            raise ValueError(f"runtime={self.runtime!r}; expected python or cpp")
        check_rates(tuple(self.acceptance), self.max_draft_len)
        if self.price_quantile not in QUANTILES:
            raise ValueError(f"price_quantile={self.price_quantile!r}; expected one of "
                             f"{', '.join(QUANTILES)}")
