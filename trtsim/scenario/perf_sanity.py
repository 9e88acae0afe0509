"""Import TensorRT-LLM's disaggregated perf-sanity YAML into a trtsim perf scenario.

What is read (DESIGN 3.8): ``benchmark`` (mode, concurrency_list, input_length, output_length,
multi_round, streaming), ``hardware`` (num_ctx_servers, num_gen_servers), ``worker_config.ctx``
and ``.gen`` (tensor/pipeline/expert parallel sizes, enable_attention_dp, max_batch_size,
max_num_tokens, disable_overlap_scheduler, cache_transceiver_config.transceiver_runtime,
speculative_config with max_draft_len or num_nextn_predict_layers, stream_interval),
``environment.worker_env_var`` (TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: the run's forced
acceptance), and the GPU and model from
``metadata`` or the file name ``{gpu}_{model}_{isl}{osl}_con{C}_ctx{N}_{par}_gen{N}_{par}...``.
The client follows TensorRT-LLM's disaggregated benchmark script
(examples/disaggregated/slurm/benchmark/run_benchmark.sh): concurrency = the file's level x
num_gen_servers, and one run of concurrency x multi_round prompts. Fields the simulation has
no use for are reported, not silently dropped; missing required ones are errors naming the
file and the key. A file that sets no forced acceptance gives the acceptance no source: the
scenario then needs one (``--set speculative.acceptance_length=AL``, a measured AL).
"""

from __future__ import annotations

import os
import re

from .schema import ScenarioError
from .source import load_raw

# model_name prefixes of the perf-sanity files -> trtsim.perf model names
_MODELS = (("deepseek_v4_pro", "V4-Pro"), ("deepseek_r1", "DeepSeek-R1-FP4"),
           ("deepseek_v3", "DeepSeek-V3"), ("gpt_oss_120b", "gpt-oss-120b"),
           ("gpt-oss-120b", "gpt-oss-120b"), ("qwen3_235b", "Qwen3-235B-A22B"),
           ("deepseek-v4-pro", "V4-Pro"), ("deepseek-r1", "DeepSeek-R1-FP4"))
_GPUS = {"gb300": "GB300", "gb200": "GB200", "b200": "B200", "h200": "H200_SXM",
         "h100": "H100_SXM"}
_WORKER_USED = {"tensor_parallel_size", "pipeline_parallel_size", "moe_expert_parallel_size",
                "enable_attention_dp", "max_batch_size", "max_num_tokens",
                "cache_transceiver_config", "speculative_config", "stream_interval",
                "context_parallel_size", "disable_overlap_scheduler"}
_BENCH_USED = {"mode", "concurrency_list", "input_length", "output_length", "multi_round",
               "streaming"}
FORCE_ACCEPTED = "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"


def forced_acceptance(raw: dict) -> float | None:
    """The value of TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS the workers run with, if set
    (``environment.worker_env_var``, then the generation workers' own variables)."""
    env = raw.get("environment") or {}
    for key in ("gen_worker_env_var", "worker_env_var"):
        for item in str(env.get(key) or "").split():
            name, _, value = item.strip("\"'").partition("=")
            if name == FORCE_ACCEPTED:
                try:
                    return float(value)
                except ValueError:
                    return None
    return None


def is_perf_sanity(raw: dict) -> bool:
    return "worker_config" in raw and "hardware" in raw


def _require(raw: dict, path: str, source: str):
    node = raw
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ScenarioError(f"{source}: {path}: missing (a perf-sanity file needs it)")
        node = node[part]
    return node


def _match(table, text: str, what: str, source: str) -> str:
    low = text.lower()
    for key, value in (table.items() if isinstance(table, dict) else table):
        if low.startswith(key) or f"_{key}" in low or key in low:
            return value
    raise ScenarioError(f"{source}: {what} (metadata, or the file name's fields): {text!r} is "
                        f"not a {what} trtsim models")


def import_perf_sanity(source, concurrency: int | None = None) -> tuple[dict, list[str]]:
    """(perf scenario mapping, notes on ignored fields) from a perf-sanity file or mapping."""
    raw, name = load_raw(source)
    return perf_mapping(raw, name, concurrency)


def perf_mapping(raw: dict, name: str, concurrency: int | None = None) -> tuple[dict, list[str]]:
    """``import_perf_sanity`` of a mapping already read from ``name``."""
    notes: list[str] = []
    for path in ("benchmark.concurrency_list", "benchmark.input_length",
                 "benchmark.output_length", "hardware.num_ctx_servers",
                 "hardware.num_gen_servers", "worker_config.ctx", "worker_config.gen"):
        _require(raw, path, name)
    bench = _require(raw, "benchmark", name)
    workers = _require(raw, "worker_config", name)
    base = os.path.basename(name)
    meta = raw.get("metadata") or {}
    gpu_text = (meta.get("supported_gpus") or [base.split("_")[0]])[0]
    model_text = meta.get("model_name") or (base.split("_")[1] if "_" in base else "")
    conc = str(_require(raw, "benchmark.concurrency_list", name))
    levels = [int(c) for c in re.split(r"[ ,]+", conc.strip()) if c]
    if not levels:
        raise ScenarioError(f"{name}: benchmark.concurrency_list: {conc!r} lists no level")
    if len(levels) > 1 and concurrency is None:
        notes.append(f"benchmark.concurrency_list has {levels}: using {levels[0]}")
    roles = {}
    for role in ("ctx", "gen"):
        w = _require(raw, f"worker_config.{role}", name)
        notes += [f"worker_config.{role}.{k}: not modelled, ignored"
                  for k in sorted(set(w) - _WORKER_USED)]
        tp = int(w.get("tensor_parallel_size", 1))
        roles[role] = {
            "servers": int(_require(raw, f"hardware.num_{role}_servers", name)),
            "tp": tp, "pp": int(w.get("pipeline_parallel_size", 1)),
            "ep": int(w.get("moe_expert_parallel_size", 1) or 1),
            "attention_dp": bool(w.get("enable_attention_dp", False)),
            "max_batch_size": int(w.get("max_batch_size", 8)),
            "max_num_tokens": int(w.get("max_num_tokens", 8192)),
            "disable_overlap_scheduler": bool(w.get("disable_overlap_scheduler", False)),
        }
    gen = workers["gen"]
    spec = gen.get("speculative_config") or {}
    k = int(spec.get("max_draft_len", spec.get("num_nextn_predict_layers", 0)) or 0)
    runtime = str(((gen.get("cache_transceiver_config") or {}).get("transceiver_runtime")
                   or "DEFAULT")).lower()
    notes += [f"benchmark.{k2}: not modelled, ignored" for k2 in sorted(set(bench) - _BENCH_USED)]
    notes += [f"{k2}: not modelled, ignored" for k2 in sorted(set(raw) - {
        "benchmark", "worker_config", "hardware", "metadata", "environment"})]
    if "environment" in raw:
        notes.append(f"environment: only {FORCE_ACCEPTED} is read, the rest ignored")
    conc_total = (concurrency or levels[0]) * roles["gen"]["servers"]
    forced = forced_acceptance(raw)
    if bench.get("mode", "e2e") != "e2e":
        notes.append(f"benchmark.mode={bench['mode']!r}: simulated as e2e")
    scenario = {
        "kind": "perf",
        "name": os.path.splitext(base)[0] if base != "<dict>" else "perf_sanity",
        "description": f"imported from the perf-sanity file {name}",
        "hardware": _match(_GPUS, str(gpu_text), "GPU", name),
        "model": _match(_MODELS, str(model_text), "model", name),
        "ctx": roles["ctx"], "gen": roles["gen"],
        "benchmark": {"concurrency": conc_total,
                      "num_prompts": conc_total * int(bench.get("multi_round", 1)),
                      "input_length": int(_require(raw, "benchmark.input_length", name)),
                      "output_length": int(_require(raw, "benchmark.output_length", name)),
                      "streaming": bool(bench.get("streaming", True)),
                      "stream_interval": int(gen.get("stream_interval", 1) or 1)},
        "speculative": {"max_draft_len": k, **({"force_num_accepted_tokens": forced}
                                               if k and forced else {})},
        "transceiver": {"sticky_skip": "off", "version": "E",
                        "runtime": "python" if runtime == "python" else "cpp"},
        "executor": {"version": "coordinator"},
    }
    notes.append(f"benchmark: concurrency {conc_total} = {concurrency or levels[0]} x "
                 f"{roles['gen']['servers']} generation servers, {conc_total} x multi_round "
                 f"prompts in one run (TensorRT-LLM's run_benchmark.sh)")
    if k and forced:
        notes.append(f"speculative: the workers force {forced:g} accepted drafts per step "
                     f"({FORCE_ACCEPTED})")
    elif k:
        notes.append(f"speculative: the file forces no acceptance ({FORCE_ACCEPTED} unset), so "
                     f"none is sourced: set speculative.acceptance_length to the run's "
                     f"measured AL")
    notes.append("the control plane follows TRT-LLM's newest stored code (executor.version "
                 "coordinator, transceiver.version E); no host work per iteration is sourced")
    return scenario, notes
