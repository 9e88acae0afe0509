"""Performance scenarios (``kind: perf``): a disaggregated deployment at cluster scale, the
serving benchmark's client, and the options the incidents turn on; run by the serving
simulation with the control plane counted on trtsim's executor.

    kind: perf
    hardware: GB300
    model: V4-Pro
    ctx: {servers: 1, tp: 4, ep: 4, attention_dp: true, max_batch_size: 2, max_num_tokens: 8192}
    gen: {servers: 4, tp: 8, ep: 8, max_batch_size: 1}
    benchmark: {concurrency: 16, num_prompts: 128, multi_round: 8, input_length: 7456,
                output_length: 923, streaming: true, stream_interval: 100}
    speculative: {max_draft_len: 3, acceptance: 0.85}
    transceiver: {sticky_skip: "off", runtime: python, async_consensus: false}
    worker: {bypass_entry_point: false}
    measured: {output_throughput: 600.1, ...}     # optional: a measured row to compare with
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from ..disagg.transceiver import STICKY_VARIANTS
from .functional import ScenarioError, _build, _err, _section, _typed, load_raw, set_dotted
from ..perf.measured import worker_bypass_overhead
from ..perf.serving_sim import BenchmarkConfig, InstanceConfig, PerfConfig

_TOP = {"kind", "name", "description", "hardware", "model", "ctx", "gen", "benchmark",
        "speculative", "transceiver", "worker", "measured", "seed", "node_cores"}
_INSTANCE_TYPES = {f.name: (bool if f.name == "attention_dp" else int)
                   for f in fields(InstanceConfig)}
_BENCH_TYPES = {f.name: (bool if f.name == "streaming" else int) for f in fields(BenchmarkConfig)}


def is_perf(raw: dict) -> bool:
    return raw.get("kind") == "perf"


@dataclass
class PerfScenario:
    name: str
    description: str
    config: PerfConfig
    sticky_skip: str
    bypass_entry_point: bool
    measured: dict = field(default_factory=dict)
    source: str = "<dict>"
    raw: dict = field(default_factory=dict)


def load_perf(source, overrides: dict | None = None) -> PerfScenario:
    raw, name = load_raw(source)
    for key, value in (overrides or {}).items():
        set_dotted(raw, key, value)
    for k in raw:
        if k not in _TOP:
            raise _err(name, k, raw[k], f"is not a known key (known: {', '.join(sorted(_TOP))})")
    ctx = _build(name, "ctx", InstanceConfig, _section(name, raw, "ctx", set(_INSTANCE_TYPES)),
                 _INSTANCE_TYPES)
    gen = _build(name, "gen", InstanceConfig, _section(name, raw, "gen", set(_INSTANCE_TYPES)),
                 _INSTANCE_TYPES)
    bench = _build(name, "benchmark", BenchmarkConfig,
                   _section(name, raw, "benchmark", set(_BENCH_TYPES)), _BENCH_TYPES)
    spec = _section(name, raw, "speculative", {"max_draft_len", "acceptance", "decoding_type"})
    tx = _section(name, raw, "transceiver", {"sticky_skip", "runtime", "async_consensus"})
    worker = _section(name, raw, "worker", {"bypass_entry_point"})
    sticky = _typed(name, "transceiver.sticky_skip", tx.get("sticky_skip", "off"), str)
    if sticky not in STICKY_VARIANTS:
        raise _err(name, "transceiver.sticky_skip", sticky,
                   f"is not one of {', '.join(STICKY_VARIANTS)}")
    bypass = _typed(name, "worker.bypass_entry_point", worker.get("bypass_entry_point", False), bool)
    k = _typed(name, "speculative.max_draft_len", spec.get("max_draft_len", 0), int)
    try:
        config = PerfConfig(
            hardware=_typed(name, "hardware", raw.get("hardware", ""), str),
            model=_typed(name, "model", raw.get("model", ""), str), ctx=ctx, gen=gen,
            benchmark=bench, max_draft_len=k,
            acceptance=_typed(name, "speculative.acceptance", spec.get("acceptance", 0.0), float),
            runtime=_typed(name, "transceiver.runtime", tx.get("runtime", "cpp"), str),
            async_consensus=_typed(name, "transceiver.async_consensus",
                                   tx.get("async_consensus", False), bool),
            worker_step_overhead_s=worker_bypass_overhead(gen.max_batch_size) if bypass else 0.0,
            node_cores=_typed(name, "node_cores", raw.get("node_cores", 64), int),
            seed=_typed(name, "seed", raw.get("seed", 0), int))
    except (ValueError, KeyError) as exc:
        raise ScenarioError(f"{name}: {str(exc).strip(chr(39))}") from None
    measured = raw.get("measured") or {}
    if not isinstance(measured, dict):
        raise _err(name, "measured", measured, "must map metric names to values")
    return PerfScenario(_typed(name, "name", raw.get("name", name), str),
                        _typed(name, "description", raw.get("description", ""), str),
                        config, sticky, bypass, dict(measured), name, raw)
