"""Scenarios: YAML (or dict) -> a validated, frozen ``Scenario``.

Every key is checked: an unknown key, a wrong type or an impossible value is a
``ScenarioError`` whose message names the file, the dotted key and the value
(``scenarios/x.yaml: transceiver.sticky_skip: 'sometimes' is not one of off, ...``).
Overrides are dotted keys applied to the raw mapping before validation, so
``--set model.window=24`` is checked like the file itself.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field, fields

import yaml

from ..disagg.transceiver import TransceiverConfig
from ..executor.config import ExecutorConfig, ServingWorkload
from ..state.kv_cache import KvCacheConfig
from ..comm.guard.policy import GUARDS
from ..comm.launcher import BACKENDS
from ..layout.topology import Deployment, InstanceSpec, topology

WORKLOAD_KINDS = ("transfer", "serving")


class ScenarioError(ValueError):
    """Bad scenario input: the message is one line naming file, key and value."""


class _Loader(yaml.SafeLoader):
    """YAML 1.2 booleans only: ``off``/``on``/``yes``/``no`` stay strings (sticky_skip: off)."""


_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:bool"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.copy().items()}
for _first in "tTfF":
    _Loader.yaml_implicit_resolvers.setdefault(_first, []).insert(0, (
        "tag:yaml.org,2002:bool", __import__("re").compile(r"^(?:true|True|TRUE|false|False|FALSE)$")))


def parse_value(text: str):
    """A ``--set key=value`` value, read as YAML (numbers, lists, null) with 1.2 booleans."""
    return yaml.load(text, Loader=_Loader)


@dataclass(frozen=True)
class TransferWorkload:
    """TRT-LLM's transfer test: one request per prompt length (DESIGN 3.2: 30, 60, 80)."""

    requests: tuple[int, ...] = (30, 60, 80)
    dp_offset: int = 0          # attention DP: request i on DP rank (i + dp_offset) % tp

    def __post_init__(self) -> None:
        if not self.requests or any(not isinstance(n, int) or n < 1 for n in self.requests):
            raise ValueError(f"requests={list(self.requests)!r} must be prompt lengths >= 1")


@dataclass(frozen=True)
class Scenario:
    """A resolved scenario: the deployment and every option, validated."""

    name: str
    deployment: Deployment
    kv: KvCacheConfig
    workload: TransferWorkload | ServingWorkload
    description: str = ""
    backend: str = "inproc"
    guard: str = "strict"
    seed: int = 0
    timeout: float = 120.0
    transceiver: TransceiverConfig = TransceiverConfig()
    executor: ExecutorConfig = ExecutorConfig()
    speculative: object | None = None
    faults: dict[int, str] = field(default_factory=dict)
    expect: str = "ok"          # the verdict this scenario reproduces; the run holds if equal
    delays: tuple[tuple[int, float], ...] = ()     # global rank -> seconds before each call
    source: str = "<dict>"
    raw: dict = field(default_factory=dict, compare=False)

    @property
    def kind(self) -> str:
        return "transfer" if isinstance(self.workload, TransferWorkload) else "serving"


# -- schema --------------------------------------------------------------------------------
_TOP = {"name", "description", "topology", "deployment", "backend", "guard", "seed", "timeout",
        "model", "workload", "transceiver", "executor", "speculative", "faults", "expect",
        "delays"}
VERDICTS = ("ok", "mismatch", "deadlock", "failed")
_MODEL = {"num_kv_heads", "head_dim", "tokens_per_block", "max_seq_len", "window", "dtype",
          "num_layers"}
_INSTANCE = {"tp", "pp", "cp", "attention_dp"}
_DEPLOYMENT = {"ctx", "gen", "num_layers", "mla"}


def _err(source: str, key: str, value, reason: str) -> ScenarioError:
    return ScenarioError(f"{source}: {key}: {value!r} {reason}")


def _section(source: str, raw: dict, key: str, allowed: set[str]) -> dict:
    value = raw.get(key, {}) or {}
    if not isinstance(value, dict):
        raise _err(source, key, value, "must be a mapping")
    for k in value:
        if k not in allowed:
            raise _err(source, f"{key}.{k}", value[k], f"is not a known key (known: "
                       f"{', '.join(sorted(allowed))})")
    return value


def _typed(source: str, key: str, value, kind):
    """Check a scalar's type: int (not bool), float (int ok), str, bool."""
    ok = {int: isinstance(value, int) and not isinstance(value, bool),
          float: isinstance(value, (int, float)) and not isinstance(value, bool),
          str: isinstance(value, str), bool: isinstance(value, bool)}[kind]
    if not ok:
        raise _err(source, key, value, f"must be {'a number' if kind is float else kind.__name__}")
    return value


def _build(source: str, key: str, cls, values: dict, types: dict):
    """Construct a config dataclass from a section, turning its ValueError into one line."""
    names = {f.name for f in fields(cls)}
    for k in values:
        if k not in names:
            raise _err(source, f"{key}.{k}", values[k], f"is not a known key (known: "
                       f"{', '.join(sorted(names))})")
    kwargs = {}
    for k, v in values.items():
        kind = types.get(k)
        if isinstance(v, list):
            v = tuple(v)
        if kind is not None and not (v is None and k in _NULLABLE):
            _typed(source, f"{key}.{k}", v, kind)
        kwargs[k] = v
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as exc:
        bad = next((k for k in values if str(exc).startswith(f"{k}=")), None)
        where = f"{key}.{bad}" if bad else key
        raise ScenarioError(f"{source}: {where}: {exc}") from None


_NULLABLE = {"timeout_iters", "window"}
_EXECUTOR_TYPES = {"loop": str, "max_iterations": int, "max_batch_size": int,
                   "max_num_tokens": int, "kv_blocks": int, "enable_inflight_cancel": bool,
                   "benchmark_fill": str, "watchdog_iters": int, "pp_handling": str,
                   "forward_ms": float}
_TRANSCEIVER_TYPES = {"sticky_skip": str, "outcome": str, "timeout_iters": int, "runtime": str,
                      "async_consensus": bool}
_SERVING_TYPES = {"num_requests": int, "arrival_interval": int, "seed": int, "dp_offset": int}


def set_dotted(raw: dict, key: str, value) -> None:
    """Apply one override ``a.b.c = value`` to a raw scenario mapping."""
    parts = key.split(".")
    node = raw
    for p in parts[:-1]:
        child = node.get(p)
        if child is None:
            child = node[p] = {}
        if not isinstance(child, dict):
            raise ScenarioError(f"override {key}: {p!r} is not a section")
        node = child
    node[parts[-1]] = value


def load_raw(source) -> tuple[dict, str]:
    """The raw mapping of a scenario file (or a dict given directly) and its name."""
    if isinstance(source, dict):
        return copy.deepcopy(source), "<dict>"
    path = os.fspath(source)
    try:
        with open(path) as f:
            raw = yaml.load(f, Loader=_Loader)
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such scenario file") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "?"
        raise ScenarioError(f"{path}: {where}: not valid YAML ({getattr(exc, 'problem', exc)})") \
            from None
    if not isinstance(raw, dict):
        raise ScenarioError(f"{path}: the top level must be a mapping, not {type(raw).__name__}")
    return raw, path


def load_scenario(source, overrides: dict | None = None) -> Scenario:
    """Validate and resolve a scenario file or mapping, with dotted-key overrides applied."""
    raw, name = load_raw(source)
    for key, value in (overrides or {}).items():
        set_dotted(raw, key, value)
    return resolve(raw, name)


def resolve(raw: dict, source: str) -> Scenario:
    for k in raw:
        if k not in _TOP:
            raise _err(source, k, raw[k], f"is not a known key (known: {', '.join(sorted(_TOP))})")
    backend = _typed(source, "backend", raw.get("backend", "inproc"), str)
    if backend not in BACKENDS:
        raise _err(source, "backend", backend, f"is not one of {', '.join(BACKENDS)}")
    guard = _typed(source, "guard", raw.get("guard", "strict"), str)
    if guard not in GUARDS:
        raise _err(source, "guard", guard, f"is not one of {', '.join(GUARDS)}")
    seed = _typed(source, "seed", raw.get("seed", 0), int)
    timeout = _typed(source, "timeout", raw.get("timeout", 120.0), float)
    if timeout <= 0:
        raise _err(source, "timeout", timeout, "must be > 0 seconds")
    deployment = _deployment(source, raw)
    kv = _model(source, raw, deployment)
    workload = _workload(source, raw, seed)
    transceiver = _build(source, "transceiver", TransceiverConfig,
                         _section(source, raw, "transceiver", {f.name for f in fields(TransceiverConfig)}),
                         _TRANSCEIVER_TYPES)
    executor = _build(source, "executor", ExecutorConfig,
                      _section(source, raw, "executor", {f.name for f in fields(ExecutorConfig)}),
                      _EXECUTOR_TYPES)
    for inst in (deployment.ctx, deployment.gen):
        try:
            executor.loop_for(inst.pp_size)
        except ValueError as exc:
            raise _err(source, "executor.loop", executor.loop, f"does not fit: {exc}") from None
    speculative = None
    if raw.get("speculative"):
        from ..spec.config import SpecConfig
        spec_raw = _section(source, raw, "speculative", {f.name for f in fields(SpecConfig)})
        speculative = _build(source, "speculative", SpecConfig, spec_raw, SpecConfig.TYPES)
    faults = _faults(source, raw.get("faults") or {}, _request_count(workload))
    expect = _typed(source, "expect", raw.get("expect", "ok"), str)
    delays = _delays(source, raw.get("delays") or {}, deployment.world_size)
    if expect not in VERDICTS:
        raise _err(source, "expect", expect, f"is not one of {', '.join(VERDICTS)}")
    return Scenario(name=_typed(source, "name", raw.get("name", os.path.basename(source)), str),
                    description=_typed(source, "description", raw.get("description", ""), str),
                    deployment=deployment, kv=kv, workload=workload, backend=backend,
                    guard=guard, seed=seed, timeout=float(timeout), transceiver=transceiver,
                    executor=executor, speculative=speculative, faults=faults, expect=expect,
                    delays=delays,
                    source=source, raw=raw)


def _request_count(workload) -> range:
    n = len(workload.requests) if isinstance(workload, TransferWorkload) else workload.num_requests
    return range(n)


def _deployment(source: str, raw: dict) -> Deployment:
    if "topology" in raw and "deployment" in raw:
        raise _err(source, "deployment", raw["deployment"], "cannot be given with topology")
    if "deployment" not in raw:
        tid = _typed(source, "topology", raw.get("topology", "tp1_pp1"), str)
        try:
            return topology(tid)
        except ValueError as exc:
            raise ScenarioError(f"{source}: topology: {exc}") from None
    d = _section(source, raw, "deployment", _DEPLOYMENT)
    layers = _typed(source, "deployment.num_layers", d.get("num_layers", 4), int)
    mla = _typed(source, "deployment.mla", d.get("mla", False), bool)
    specs = []
    for role in ("ctx", "gen"):
        inst = _section(source, d, role, _INSTANCE)
        try:
            specs.append(InstanceSpec(
                tp_size=_typed(source, f"deployment.{role}.tp", inst.get("tp", 1), int),
                pp_size=_typed(source, f"deployment.{role}.pp", inst.get("pp", 1), int),
                cp_size=_typed(source, f"deployment.{role}.cp", inst.get("cp", 1), int),
                enable_attention_dp=_typed(source, f"deployment.{role}.attention_dp",
                                           inst.get("attention_dp", False), bool),
                is_mla=mla, num_layers=layers))
        except ValueError as exc:
            raise ScenarioError(f"{source}: deployment.{role}: {exc}") from None
    return Deployment("custom", *specs)


def _model(source: str, raw: dict, dep: Deployment) -> KvCacheConfig:
    m = _section(source, raw, "model", _MODEL)
    window = m.get("window")
    if window is not None:
        window = (window,) if isinstance(window, int) and not isinstance(window, bool) else window
        if not isinstance(window, (list, tuple)) or not window or any(
                not isinstance(w, int) or isinstance(w, bool) or w < 1 for w in window):
            raise _err(source, "model.window", m.get("window"),
                       "must be null, a positive integer or a list of them")
        window = tuple(window)
    values = {k: v for k, v in m.items() if k != "window"}
    values.setdefault("num_layers", dep.ctx.num_layers)
    values["windows"] = window
    values["is_mla"] = dep.ctx.is_mla
    return _build(source, "model", KvCacheConfig, values,
                  {"num_kv_heads": int, "head_dim": int, "tokens_per_block": int,
                   "max_seq_len": int, "dtype": str, "num_layers": int})


def _workload(source: str, raw: dict, seed: int):
    w = dict(_section(source, raw, "workload", {"kind", "requests", "num_requests", "input_len",
                                                  "output_len", "arrival_interval", "seed",
                                                  "dp_offset"}))
    kind = w.pop("kind", "transfer")
    if kind not in WORKLOAD_KINDS:
        raise _err(source, "workload.kind", kind, f"is not one of {', '.join(WORKLOAD_KINDS)}")
    if kind == "transfer":
        extra = set(w) - {"requests", "dp_offset"}
        if extra:
            k = sorted(extra)[0]
            raise _err(source, f"workload.{k}", w[k], "is not a key of a transfer workload "
                       "(requests, dp_offset)")
        if "requests" in w and not isinstance(w["requests"], (list, tuple)):
            raise _err(source, "workload.requests", w["requests"], "must be a list of lengths")
        return _build(source, "workload", TransferWorkload, w, {"dp_offset": int})
    if "requests" in w:
        raise _err(source, "workload.requests", w["requests"],
                   "is a transfer key; a serving workload takes num_requests, input_len, ...")
    w.setdefault("seed", seed)
    return _build(source, "workload", ServingWorkload, w, _SERVING_TYPES)


def _delays(source: str, raw, world: int) -> tuple[tuple[int, float], ...]:
    if not isinstance(raw, dict):
        raise _err(source, "delays", raw, "must map a global rank to milliseconds")
    out = []
    for rank, ms in raw.items():
        if not isinstance(rank, int) or not 0 <= rank < world:
            raise _err(source, f"delays.{rank}", ms, f"names no rank (0..{world - 1})")
        if not isinstance(ms, (int, float)) or isinstance(ms, bool) or ms < 0:
            raise _err(source, f"delays.{rank}", ms, "must be milliseconds >= 0")
        out.append((rank, ms / 1000.0))
    return tuple(sorted(out))


FAULT_KINDS = ("ctx_fail", "ctx_cancel", "gen_fail", "gen_cancel", "timeout", "error")


def _faults(source: str, raw, requests: range) -> dict[int, str]:
    if not isinstance(raw, dict):
        raise _err(source, "faults", raw, "must map request index to a fault")
    out = {}
    for k, v in raw.items():
        if not isinstance(k, int) or k not in requests:
            raise _err(source, f"faults.{k}", v, f"names no request (0..{len(requests) - 1})")
        if not isinstance(v, str) or not (v in FAULT_KINDS or v.startswith("send_retry@")):
            raise _err(source, f"faults.{k}", v, f"is not one of {', '.join(FAULT_KINDS)}, "
                       "send_retry@STAGE")
        out[k] = v
    return out
