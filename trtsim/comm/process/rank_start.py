"""A process rank's start-up, the same for every way a process becomes a rank (spawned by the
launcher, started by torchrun, started by mpirun): its Distributed over its transport, and
the rank program run inside the launch's interception and iteration marker."""

from __future__ import annotations

from typing import Any, Callable

from .. import intercept, markers
from ..current import bind
from ..distributed import Distributed
from ..origin import OriginFinder, call_rank_program
from . import call_log


def rank_distributed(place, transport, logger, config, wrappers: tuple[str, ...] = ()):
    """This process's Distributed: ``transport``, logged when the launch keeps call logs
    (``logger``), bound as the current rank. ``wrappers`` are frames of the way the rank was
    started that are no part of a purpose."""
    if logger is not None:
        transport = call_log.LoggedTransport(transport, logger)
    dist = Distributed(place, transport, OriginFinder(config.wrappers + tuple(wrappers)))
    bind(dist)
    return dist


def run_program(dist, config, load: Callable[[], tuple[Callable, tuple]]) -> Any:
    """Run the rank program that ``load`` gives (program, args) with the launch's stand-ins
    and marker installed; ``load`` runs after the stand-ins, so the program's modules import
    them."""
    with intercept.installed(config.intercept) as interception:
        interception.attach(dist)
        program, args = load()
        with markers.installed(config.iteration_marker):
            return call_rank_program(program, dist, args)
