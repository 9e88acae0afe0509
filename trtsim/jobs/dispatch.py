"""Run any scenario: the registry says what it is, the kind's job runs it."""

from __future__ import annotations

import re

from ..scenario.functional import Scenario
from ..scenario.registry import load_any
from ..scenario.schema import ScenarioError
from ..postmortem.replay import Replay
from .perf_run import PerfResult, run_perf
from .replay_job import ReplayResult, run_replay
from .run import RunResult, run

_CENSUS_FAILED = "control-plane census run failed"


def run_any(source, overrides: dict | None = None, progress=None,
            backend: str | None = None) -> "RunResult | PerfResult | ReplayResult":
    """Load ``source`` (file, shipped name, mapping or resolved scenario) with ``overrides``
    and run it. ``backend`` applies to functional scenarios; a perf scenario simulates its
    servers and runs no ranks, so asking for one is bad input (``ScenarioError``)."""
    scenario = load_any(source, overrides)
    if isinstance(scenario, Scenario):
        return run(scenario, backend=backend, progress=progress)
    if isinstance(scenario, Replay):
        return run_replay(scenario, backend=backend, progress=progress)
    if backend is not None:
        raise ScenarioError(f"{scenario.source}: backend: {backend!r} does not apply: a perf "
                            "scenario simulates its servers (its control plane is counted "
                            "on the inproc backend)")
    try:
        return run_perf(scenario)
    except RuntimeError as exc:
        if not str(exc).startswith(_CENSUS_FAILED):
            raise
        raise ScenarioError(census_failure(scenario, str(exc))) from None


def census_failure(scenario, text: str) -> str:
    """One line for a perf layout the executor cannot run to count its control plane: the
    file, the instance section and its layout, and the first line of the rank's error."""
    reason = text[len(_CENSUS_FAILED):].lstrip(": ").splitlines()[0]
    reason = reason.removeprefix("RankFailed: ")
    role = next(iter(re.findall(r"\b(ctx|gen) (?:rank|instance)\b", reason)), None)
    if role is None:
        return f"{scenario.source}: ctx, gen: the executor cannot run these layouts ({reason})"
    lay = getattr(scenario.config, role).layout
    layout = f"tp={lay.tp_size} pp={lay.pp_size} attention_dp={lay.enable_attention_dp}"
    return (f"{scenario.source}: {role}: {layout}: the executor cannot run this layout to "
            f"count its control plane ({reason})")
