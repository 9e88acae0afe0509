"""Run any scenario: the registry says what it is, the kind's job runs it."""

from __future__ import annotations

from ..scenario.functional import Scenario
from ..scenario.registry import load_any
from ..scenario.schema import ScenarioError
from ..postmortem.replay import Replay
from .control_plane import CensusRunFailed
from .perf_run import PerfResult, run_perf
from .replay_job import ReplayResult, run_replay
from .run import RunResult, run


def run_any(source, overrides: dict | None = None, progress=None,
            backend: str | None = None,
            out_dir: str | None = None) -> "RunResult | PerfResult | ReplayResult":
    """Load ``source`` (file, shipped name, mapping or resolved scenario) with ``overrides``
    and run it. ``backend`` applies to functional scenarios; a perf scenario simulates its
    servers and runs no ranks, so asking for one is bad input (``ScenarioError``).
    ``out_dir``: where a functional run with ``gates: flip`` writes its counterexamples."""
    scenario = load_any(source, overrides)
    if isinstance(scenario, Scenario):
        return run(scenario, backend=backend, progress=progress, out_dir=out_dir)
    if isinstance(scenario, Replay):
        return run_replay(scenario, backend=backend, progress=progress)
    if backend is not None:
        raise ScenarioError(f"{scenario.source}: backend: {backend!r} does not apply: a perf "
                            "scenario simulates its servers (its control plane is counted "
                            "on the inproc backend)")
    try:
        return run_perf(scenario)
    except CensusRunFailed as exc:
        raise ScenarioError(census_failure(scenario, exc)) from None


def census_failure(scenario, failure: CensusRunFailed) -> str:
    """One line for a perf layout the executor cannot run to count its control plane: the
    file, the instance section at fault and its layout, and the failure's first line."""
    if failure.role is None:
        return (f"{scenario.source}: ctx, gen: the executor cannot run these layouts "
                f"({failure.reason})")
    lay = getattr(scenario.config, failure.role).layout
    layout = f"tp={lay.tp_size} pp={lay.pp_size} attention_dp={lay.enable_attention_dp}"
    return (f"{scenario.source}: {failure.role}: {layout}: the executor cannot run this layout "
            f"to count its control plane ({failure.reason})")
