"""Run any scenario: the registry says what it is, the kind's job runs it."""

from __future__ import annotations

from ..scenario.functional import Scenario
from ..scenario.registry import load_any
from .perf_run import PerfResult, run_perf
from .run import RunResult, run


def run_any(source, overrides: dict | None = None, progress=None) -> "RunResult | PerfResult":
    """Load ``source`` (file, mapping or resolved scenario) with ``overrides`` and run it."""
    scenario = load_any(source, overrides)
    if isinstance(scenario, Scenario):
        return run(scenario, progress=progress)
    return run_perf(scenario)
