"""The rank a piece of code runs for: one Distributed per rank, bound in the rank's context.

Inproc ranks are greenlets of one thread, each with its own ``contextvars`` context, so a
context variable tells them apart; a process rank binds it once. Code that has no ``dist`` in
hand (an iteration marker, intercepted torch.distributed or MPI calls) asks ``current()``.
"""

from __future__ import annotations

from contextvars import ContextVar

_RANK: ContextVar = ContextVar("trtsim_rank", default=None)


def bind(dist) -> None:
    """Make ``dist`` the current rank's communicator for the rest of this context."""
    _RANK.set(dist)


def current():
    """The current rank's Distributed, or None outside a launched rank."""
    return _RANK.get()
