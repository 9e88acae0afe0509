"""Performance scenarios (``kind: perf``): a disaggregated deployment at cluster scale, the
serving benchmark's client, and the options the incidents turn on; run by the serving
simulation with the control plane counted on trtsim's executor.

    kind: perf
    hardware: GB300
    model: V4-Pro
    ctx: {servers: 1, tp: 4, ep: 4, attention_dp: true, max_batch_size: 2, max_num_tokens: 8192}
    gen: {servers: 4, tp: 8, ep: 8, max_batch_size: 1, host_work_ms: 12.5}
    benchmark: {concurrency: 16, num_prompts: 128, input_length: 7456, output_length: 923,
                streaming: true, stream_interval: 100}
    speculative: {max_draft_len: 3, acceptance_length: 2.654}   # or acceptance: [a1, a2, a3],
                                                  # or force_num_accepted_tokens: f
    transceiver: {version: C, sticky_skip: "off", runtime: python, async_consensus: false}
    executor: {version: classic}                  # whose call pattern the census follows
    host_backend: mpi                             # whose measured host collectives price it
    worker: {bypass_entry_point: false}
    measured: {output_throughput: 600.1, ...}     # optional: a measured row to compare with
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..checks import field_types, require_choices
from ..disagg.transceiver_config import TransceiverConfig
from ..executor.call_pattern import ExecutorVersion
from ..perf.acceptance import check_rates, rates_from_acceptance_length, rates_from_forced
from ..perf.measured import worker_bypass_overhead
from ..perf.serving_sim import BenchmarkConfig, InstanceConfig, PerfConfig
from .schema import ScenarioError, build, check_keys, err, scalar, section
from .source import with_overrides


def is_perf(raw: dict) -> bool:
    return raw.get("kind") == "perf"


@dataclass(frozen=True)
class PerfSpeculative:
    """MTP as the serving simulation prices it (scenario key ``speculative``): K drafts and
    the acceptance from exactly one source (``trtsim.perf.acceptance``)."""

    max_draft_len: int = field(default=0, metadata={"help": "K drafts per step (0: no MTP)"})
    acceptance: tuple[float, ...] = field(default=(), metadata={
        "help": "acceptance rate per draft depth, K values (aiconfigurator's nextn_accept_rates)",
        "type": "a list of K numbers in [0, 1]"})
    acceptance_length: float = field(default=0.0, metadata={
        "help": "a measured acceptance length (tokens per step), as TensorRT-LLM encodes a "
                "target AL (forced AL - 1)"})
    force_num_accepted_tokens: float = field(default=0.0, metadata={
        "help": "the modelled run's TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS (0: unset)"})
    decoding_type: str = field(default="MTP", metadata={"help": "informational"})

    def __post_init__(self) -> None:
        if self.max_draft_len < 0:
            raise ValueError(f"max_draft_len={self.max_draft_len!r} must be >= 0")
        given = [name for name in ("acceptance", "acceptance_length",
                                   "force_num_accepted_tokens") if getattr(self, name)]
        if len(given) > 1:
            raise ValueError(f"acceptance={', '.join(given)}: give one source of the acceptance")
        if self.max_draft_len and not given:
            raise ValueError(f"acceptance=(): max_draft_len {self.max_draft_len} needs the "
                             f"acceptance's source: acceptance (a rate per depth), "
                             f"acceptance_length (a measured AL) or force_num_accepted_tokens "
                             f"(the run's TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS)")
        self.rates()

    def rates(self) -> tuple[float, ...]:
        """The acceptance per draft depth, from whichever source is given."""
        k = self.max_draft_len
        if self.force_num_accepted_tokens:
            return rates_from_forced(self.force_num_accepted_tokens, k)
        if self.acceptance_length:
            return rates_from_acceptance_length(self.acceptance_length, k)
        rates = tuple(self.acceptance) if k else ()
        check_rates(rates, k)
        return rates


@dataclass(frozen=True)
class PerfExecutor:
    """Which TensorRT-LLM executor loop the control-plane census follows (key ``executor``)."""

    version: ExecutorVersion = field(default="trtsim", metadata={
        "help": "trtsim, classic (TRT-LLM's pre-coordinator PyExecutor) or coordinator (its "
                "DisaggTransferCoordinator): where each loop calls the transceiver"})

    def __post_init__(self) -> None:
        require_choices(self)


@dataclass(frozen=True)
class PerfWorker:
    """The MTP worker's entry point (scenario key ``worker``)."""

    bypass_entry_point: bool = field(default=False, metadata={
        "help": "incident 5.1: each step launched eagerly instead of replayed from a graph"})


@dataclass(frozen=True)
class PerfScenario:
    """A resolved perf scenario. The file's top level has exactly these fields' keys."""

    config: PerfConfig = field(metadata={"internal": True})
    transceiver: TransceiverConfig = field(default_factory=TransceiverConfig)
    speculative: PerfSpeculative = field(default_factory=PerfSpeculative)
    worker: PerfWorker = field(default_factory=PerfWorker)
    executor: PerfExecutor = field(default_factory=PerfExecutor)
    ctx: InstanceConfig = field(default_factory=InstanceConfig)
    gen: InstanceConfig = field(default_factory=InstanceConfig)
    benchmark: BenchmarkConfig = field(default_factory=BenchmarkConfig)
    kind: str = field(default="perf", metadata={"help": "perf"})
    name: str = field(default="", metadata={"help": "the scenario's name (default: file name)"})
    description: str = field(default="", metadata={"help": "what it predicts"})
    hardware: str = field(default="", metadata={"help": "GPU (trtsim.perf.HARDWARE)"})
    model: str = field(default="", metadata={"help": "model (trtsim.perf.MODELS)"})
    seed: int = field(default=0, metadata={"help": "seed of the simulated acceptance draws"})
    host_backend: Literal["mpi", "gloo"] = field(default="mpi", metadata={
        "help": "whose measured host-object collectives price the control plane: mpi "
                "(TRT-LLM's) or gloo (trtsim's process backend)"})
    measured: dict = field(default_factory=dict, metadata={
        "help": "a measured row to compare with: metric -> value"})
    source: str = field(default="<dict>", metadata={"internal": True})
    raw: dict = field(default_factory=dict, compare=False, metadata={"internal": True})

    @property
    def sticky_skip(self) -> str:
        return self.transceiver.sticky_skip

    @property
    def bypass_entry_point(self) -> bool:
        return self.worker.bypass_entry_point


_SECTIONS = ("transceiver", "speculative", "worker", "executor", "ctx", "gen", "benchmark")


def load_perf(source, overrides: dict | None = None) -> PerfScenario:
    """Validate and resolve a perf scenario file or mapping, with dotted-key overrides."""
    raw, name = with_overrides(source, overrides)
    return resolve_perf(raw, name)


def resolve_perf(raw: dict, name: str) -> PerfScenario:
    check_keys(PerfScenario, raw, name)
    types = field_types(PerfScenario)
    parts = {key: build(types[key], section(name, raw, key), name, key) for key in _SECTIONS}
    opts = {key: scalar(PerfScenario, key, raw, name)
            for key in ("name", "description", "hardware", "model", "seed", "host_backend")}
    opts["name"] = opts["name"] or name
    measured = raw.get("measured") or {}
    if not isinstance(measured, dict):
        raise err(name, "measured", measured, "must map metric names to values")
    tx, spec = parts["transceiver"], parts["speculative"]
    try:
        config = PerfConfig(
            hardware=opts["hardware"], model=opts["model"], ctx=parts["ctx"], gen=parts["gen"],
            benchmark=parts["benchmark"], max_draft_len=spec.max_draft_len,
            acceptance=spec.rates(), runtime=tx.runtime, async_consensus=tx.async_consensus,
            worker_step_overhead_s=worker_bypass_overhead(parts["gen"].max_batch_size)
            if parts["worker"].bypass_entry_point else 0.0,
            host_backend=opts["host_backend"], seed=opts["seed"])
    except (ValueError, KeyError) as exc:
        raise ScenarioError(f"{name}: {str(exc).strip(chr(39))}") from None
    return PerfScenario(config=config, measured=dict(measured), source=name, raw=raw,
                        **parts, **opts)

