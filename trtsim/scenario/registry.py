"""Which kind a scenario file is, decided in one place, from one reading of the file.

A perf scenario says ``kind: perf``; a TensorRT-LLM perf-sanity file is recognised by its own
top-level sections (it has no kind key); a replay (``kind: replay``) is what ``trtsim analyze
--replay`` writes; anything else is a functional scenario. Overrides
apply to the scenario trtsim resolves (for a perf-sanity file: the perf scenario it becomes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..postmortem.replay import Replay, is_replay, load_replay
from .functional import Scenario, resolve
from .perf import PerfScenario, is_perf, resolve_perf
from .perf_sanity import is_perf_sanity, perf_mapping
from .source import load_raw, set_dotted


@dataclass(frozen=True)
class ScenarioKind:
    """A kind of scenario file: how to recognise its raw mapping and resolve it."""

    name: str
    matches: Callable[[dict], bool]
    resolve: Callable[[dict, str], "Scenario | PerfScenario | Replay"]
    convert: Callable[[dict, str], dict] = lambda raw, name: raw   # raw -> what overrides edit


KINDS = (
    ScenarioKind("perf_sanity", is_perf_sanity, resolve_perf,
                 lambda raw, name: perf_mapping(raw, name)[0]),
    ScenarioKind("perf", is_perf, resolve_perf),
    ScenarioKind("replay", is_replay, load_replay),
    ScenarioKind("functional", lambda raw: True, resolve),
)


def kind_of(raw: dict) -> ScenarioKind:
    return next(k for k in KINDS if k.matches(raw))


def load_any(source, overrides: dict | None = None) -> "Scenario | PerfScenario | Replay":
    """Read ``source`` once, recognise its kind, apply ``overrides`` and resolve it."""
    if isinstance(source, (Scenario, PerfScenario, Replay)) and not overrides:
        return source
    if isinstance(source, (Scenario, PerfScenario)):
        source = source.raw
    raw, name = load_raw(source)
    kind = kind_of(raw)
    raw = kind.convert(raw, name)
    for key, value in (overrides or {}).items():
        set_dotted(raw, key, value)
    return kind.resolve(raw, name)
