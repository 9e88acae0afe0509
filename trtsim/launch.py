"""launch(): run one rank program on every rank of a layout, collect results, raise reports.

The public entry point. It composes the backends of ``comm`` with the default price list of
the virtual clock, taken from the performance model's measured host-gather cost.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from .comm.launcher import LaunchConfig, run_ranks
from .layout.places import InstanceLayout
from .layout.topology import InstanceSpec
from .perf.comm_cost import HOST_GATHER_MEASURED
from .timeline.clock import ClockModel

NODE_CORES = 64      # host cores of a serving node: its ranks' gathers are not oversubscribed


def default_clock_model() -> ClockModel:
    """What calls cost in virtual time unless a caller says otherwise."""
    return ClockModel(host_gather=replace(HOST_GATHER_MEASURED, cores=NODE_CORES))


def launch(prog: Callable, tp: int = 1, pp: int = 1, cp: int = 1, attention_dp: bool = False,
           backend: str = "inproc", args: tuple = (), timeout: float = 60.0,
           guard: str = "strict", seed: int = 0) -> list[Any]:
    """Run ``prog(dist, *args)`` on every rank of a tp x pp x cp instance.

    Returns ``results`` with ``results[r]`` rank r's return value, or raises the report:
    CollectiveMismatch, CollectiveDeadlock, RankFailed or CollectiveTimeout.
    """
    config = LaunchConfig(backend, guard, seed, timeout, clock_model=default_clock_model())
    spec = InstanceSpec(tp_size=tp, pp_size=pp, cp_size=cp, enable_attention_dp=attention_dp,
                        num_layers=max(pp, 1))
    outcome = run_ranks([InstanceLayout("", "", spec)], prog, args, config)
    if outcome.error is not None:
        raise outcome.error
    return outcome.results
