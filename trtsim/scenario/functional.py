"""Functional scenarios: YAML (or dict) -> a validated, frozen ``Scenario``.

Every key is checked: an unknown key, a wrong type or an impossible value is a
``ScenarioError`` whose message names the file, the dotted key and the value
(``scenarios/x.yaml: transceiver.sticky_skip: sticky_skip='sometimes'; expected ...``).
Overrides are dotted keys applied to the raw mapping before validation, so
``--set model.window=24`` is checked like the file itself. The top-level keys are the fields
of ``Scenario``; each section's keys are the fields of the dataclass it builds (``schema``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Literal

from ..checks import MAX_TIMEOUT_S, require_seconds
from ..calls.errors import VERDICTS
from ..comm.flip_aim import FlipAim
from ..comm.launch_config import GATE_MODES, INTERCEPTABLE, check_intercept
from ..guard.policy import GUARDS
from ..comm.launch_config import BACKENDS
from ..comm.markers import resolve as resolve_marker
from ..disagg.transceiver_config import TransceiverConfig
from ..executor.config import ExecutorConfig, ServingWorkload
from ..layout.parallel import ParallelLayout
from ..layout.topology import Deployment, InstanceSpec, topology
from ..spec.config import SpecConfig
from ..state.fault import Fault
from ..state.kv_cache import KvCacheConfig
from .schema import ScenarioError, build, check_keys, err, known_keys, scalar, section
from .sizes import check_sizes
from .source import load_raw, parse_value, set_dotted, with_overrides

__all__ = ["Scenario", "ScenarioError", "TransferWorkload", "load_scenario", "load_raw",
           "parse_value", "set_dotted", "resolve"]


@dataclass(frozen=True)
class TransferWorkload:
    """TRT-LLM's transfer test: one request per prompt length (30, 60, 80 by default)."""

    requests: tuple[int, ...] = field(default=(30, 60, 80), metadata={
        "type": "a list of prompt lengths", "help": "prompt length of each request"})
    dp_offset: int = field(default=0, metadata={
        "help": "attention DP: request i on DP rank (i + dp_offset) % tp"})

    def __post_init__(self) -> None:
        if not self.requests or any(not isinstance(n, int) or n < 1 for n in self.requests):
            raise ValueError(f"requests={list(self.requests)!r} must be prompt lengths >= 1")


@dataclass(frozen=True)
class Deployed:
    """The deployment section's own keys (each instance is a ``ParallelLayout``)."""

    ctx: ParallelLayout = field(default_factory=ParallelLayout, metadata={"help": "the context instance"})
    gen: ParallelLayout = field(default_factory=ParallelLayout, metadata={"help": "the generation instance"})
    num_layers: int = field(default=4, metadata={"help": "layers of the model"})
    mla: bool = field(default=False, metadata={"help": "MLA: one latent KV head, replicated"})


@dataclass(frozen=True)
class Scenario:
    """A resolved scenario: the deployment and every option, validated. Field metadata gives
    each YAML key; the scenario file's top level has exactly these keys."""

    deployment: Deployment = field(metadata={
        "keys": ("topology", "deployment"), "shown_default": "tp1_pp1",
        "help": "a topology id (trtsim topologies), or deployment: {ctx: {tp, pp, cp, "
                "attention_dp}, gen: {...}, num_layers, mla}"})
    kv: KvCacheConfig = field(metadata={"key": "model", "help": "the model's KV shape"})
    workload: TransferWorkload | ServingWorkload = field(metadata={
        "help": "kind: transfer (requests) or serving (num_requests, input_len, ...)"})
    name: str = field(default="", metadata={"help": "the scenario's name (default: file name)"})
    description: str = field(default="", metadata={"help": "what it shows"})
    backend: Literal[BACKENDS] = field(default="inproc", metadata={"help": "where ranks run"})
    guard: Literal[GUARDS] = field(default="strict", metadata={"help": "what the guard checks"})
    seed: int = field(default=0, metadata={"help": "seed of the inproc schedule and workload"})
    timeout: float = field(default=120.0, metadata={"help": "seconds before the launch gives up"})
    transceiver: TransceiverConfig = field(default_factory=TransceiverConfig)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)
    speculative: SpecConfig | None = field(default=None, metadata={
        "help": "MTP in the generation step (omit: one token per step)"})
    faults: dict[int, Fault] = field(default_factory=dict, metadata={
        "help": "request index -> ctx_fail | ctx_cancel | gen_fail | gen_cancel | timeout | "
                "error | send_retry@STAGE"})
    expect: Literal[VERDICTS] = field(default="ok", metadata={
        "help": "the verdict this scenario reproduces; the run holds if equal"})
    delays: tuple[tuple[int, float], ...] = field(default=(), metadata={
        "help": "global rank -> milliseconds of extra work before each call"})
    iteration_marker: str | None = field(default=None, metadata={
        "help": "pkg.module:Class.method: each entry starts the rank's next iteration "
                "(for code that never calls set_iteration)"})
    wrappers: tuple[str, ...] = field(default=(), metadata={
        "help": "modules whose functions only forward to collectives (no part of a purpose)"})
    intercept: tuple[str, ...] = field(default=(), metadata={
        "type": f"a list of {', '.join(INTERCEPTABLE)}",
        "help": "APIs whose direct calls in the ranks are guarded too (launch(intercept=...))"})
    gates: Literal[GATE_MODES] = field(default="off", metadata={
        "help": "latent gates: off; observe lists the conditions that decided a collective and "
                "differ by rank while the ranks agree; flip also replays each with its "
                "outcome flipped on one member (launch(gates=...))"})
    flip: FlipAim | None = field(default=None, metadata={
        "type": "a mapping: site (path:line), condition, rank, evaluation, col",
        "help": "with gates: flip, replay only this flip of one gate (what a flipped run's "
                "counterexample holds); its report is the run's verdict"})
    source: str = field(default="<dict>", metadata={"internal": True})
    raw: dict = field(default_factory=dict, compare=False, metadata={"internal": True})

    @property
    def kind(self) -> str:
        return "transfer" if isinstance(self.workload, TransferWorkload) else "serving"


def load_scenario(source, overrides: dict | None = None) -> Scenario:
    """Validate and resolve a scenario file or mapping, with dotted-key overrides applied."""
    raw, name = with_overrides(source, overrides)
    return resolve(raw, name)


def resolve(raw: dict, source: str) -> Scenario:
    check_keys(Scenario, raw, source)
    opts = {name: scalar(Scenario, name, raw, source)
            for name in ("description", "backend", "guard", "seed", "timeout", "expect",
                         "iteration_marker", "gates")}
    opts["wrappers"] = _wrappers(source, raw.get("wrappers", ()))
    apis = raw.get("intercept", ())
    try:
        opts["intercept"] = check_intercept(apis)
    except ValueError:
        raise err(source, "intercept", apis, f"must be a list of {', '.join(INTERCEPTABLE)}") \
            from None
    if opts["iteration_marker"] is not None:
        try:
            resolve_marker(opts["iteration_marker"])
        except ValueError as exc:
            raise ScenarioError(f"{source}: iteration_marker: {exc}") from None
    opts["name"] = scalar(Scenario, "name", raw, source) or os.path.basename(source)
    opts["flip"] = _flip(source, raw, opts["gates"])
    try:
        require_seconds("timeout", opts["timeout"])
    except ValueError as exc:
        raise ScenarioError(f"{source}: timeout: {exc}") from None
    opts["timeout"] = float(opts["timeout"])
    deployment = _deployment(source, raw)
    workload = _workload(source, raw, opts["seed"])
    executor = build(ExecutorConfig, section(source, raw, "executor"), source, "executor")
    for inst in (deployment.ctx, deployment.gen):
        try:
            executor.loop_for(inst.pp_size)
        except ValueError as exc:
            raise err(source, "executor.loop", executor.loop, f"does not fit: {exc}") from None
    speculative = None
    if raw.get("speculative"):
        speculative = build(SpecConfig, section(source, raw, "speculative"), source, "speculative")
    scenario = Scenario(
        deployment=deployment, workload=workload, executor=executor, speculative=speculative,
        kv=build(KvCacheConfig, _model_keys(source, raw), source, "model",
                 num_layers=deployment.ctx.num_layers, is_mla=deployment.ctx.is_mla),
        transceiver=build(TransceiverConfig, section(source, raw, "transceiver"), source,
                          "transceiver"),
        faults=_faults(source, raw.get("faults") or {}, _request_count(workload)),
        delays=_delays(source, raw.get("delays") or {}, deployment.world_size),
        source=source, raw=raw, **opts)
    check_sizes(scenario)                 # before any rank starts: see sizes.py
    return scenario


def _flip(source: str, raw: dict, gates: str) -> FlipAim | None:
    if raw.get("flip") is None:
        return None
    if gates != "flip":
        raise err(source, "flip", raw["flip"], f"replays a flip: it needs gates: flip (got "
                  f"gates: {gates})")
    try:
        return FlipAim.from_dict(raw["flip"], "flip")
    except ValueError as exc:
        raise ScenarioError(f"{source}: {exc}") from None


def _wrappers(source: str, value) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(
            isinstance(w, str) for w in value):
        raise err(source, "wrappers", value, "must be a list of module names")
    return tuple(value)


def _model_keys(source: str, raw: dict) -> dict:
    values = dict(section(source, raw, "model"))
    if "num_layers" in values:                # the deployment owns the layer count
        raise err(source, "model.num_layers", values["num_layers"],
                  "is set by the deployment (deployment.num_layers, or the topology's)")
    return values


def _request_count(workload) -> range:
    n = len(workload.requests) if isinstance(workload, TransferWorkload) else workload.num_requests
    return range(n)


def _deployment(source: str, raw: dict) -> Deployment:
    if "topology" in raw and "deployment" in raw:
        raise err(source, "deployment", raw["deployment"], "cannot be given with topology")
    if "deployment" not in raw:
        tid = raw.get("topology", "tp1_pp1")
        if not isinstance(tid, str):
            raise err(source, "topology", tid, "must be str")
        try:
            return topology(tid)
        except ValueError as exc:
            raise ScenarioError(f"{source}: topology: {exc}") from None
    d = section(source, raw, "deployment")
    for role in ("ctx", "gen"):
        section(source, d, role)
    dep = build(Deployed, d, source, "deployment")
    specs = []
    for role in ("ctx", "gen"):
        layout = getattr(dep, role)
        try:
            specs.append(InstanceSpec(**{f.name: getattr(layout, f.name)
                                         for f in fields(ParallelLayout)},
                                      is_mla=dep.mla, num_layers=dep.num_layers))
        except ValueError as exc:
            raise ScenarioError(f"{source}: deployment.{role}: {exc}") from None
    return Deployment("custom", *specs)


def _workload(source: str, raw: dict, seed: int):
    w = dict(section(source, raw, "workload"))
    kind = w.pop("kind", "transfer")
    kinds = {"transfer": TransferWorkload, "serving": ServingWorkload}
    if not isinstance(kind, str) or kind not in kinds:      # a list or a mapping: no hash
        raise err(source, "workload.kind", kind, f"is not one of {', '.join(kinds)}")
    if kind == "transfer":
        extra = sorted(set(w) - set(known_keys(TransferWorkload)))
        if extra:
            raise err(source, f"workload.{extra[0]}", w[extra[0]], "is not a key of a transfer "
                      f"workload ({', '.join(known_keys(TransferWorkload))})")
        return build(TransferWorkload, w, source, "workload")
    if "requests" in w:
        raise err(source, "workload.requests", w["requests"],
                  "is a transfer key; a serving workload takes num_requests, input_len, ...")
    w.setdefault("seed", seed)
    return build(ServingWorkload, w, source, "workload")


def _delays(source: str, raw, world: int) -> tuple[tuple[int, float], ...]:
    if not isinstance(raw, dict):
        raise err(source, "delays", raw, "must map a global rank to milliseconds")
    out = []
    for rank, ms in raw.items():
        if not isinstance(rank, int) or not 0 <= rank < world:
            raise err(source, f"delays.{rank}", ms, f"names no rank (0..{world - 1})")
        if not isinstance(ms, (int, float)) or isinstance(ms, bool) \
                or not 0 <= ms <= MAX_TIMEOUT_S * 1000:           # NaN fails both
            raise err(source, f"delays.{rank}", ms,
                      f"must be milliseconds from 0 to {MAX_TIMEOUT_S * 1000:,}")
        out.append((rank, ms / 1000.0))
    return tuple(sorted(out))


def _faults(source: str, raw, requests: range) -> dict[int, Fault]:
    if not isinstance(raw, dict):
        raise err(source, "faults", raw, "must map request index to a fault")
    out = {}
    for k, v in raw.items():
        if not isinstance(k, int) or k not in requests:
            raise err(source, f"faults.{k}", v, f"names no request (0..{len(requests) - 1})")
        try:
            out[k] = Fault.parse(v)
        except ValueError as exc:
            raise ScenarioError(f"{source}: faults.{k}: {exc}") from None
    return out
