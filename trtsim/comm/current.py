"""The rank a piece of code runs for: one Distributed per rank, bound in the rank's context.

Inproc ranks are greenlets or threads of one process, each with its own ``contextvars``
context, so a context variable tells them apart; a process rank binds it once. Code that has
no ``dist`` in hand (an iteration marker, intercepted torch.distributed or MPI calls) asks
``current()``.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .distributed import Distributed

_RANK: ContextVar[Distributed | None] = ContextVar("trtsim_rank", default=None)


def bind(dist: Distributed) -> None:
    """Make ``dist`` the current rank's communicator for the rest of this context."""
    _RANK.set(dist)


def current() -> Distributed | None:
    """The current rank's Distributed, or None outside a launched rank."""
    return _RANK.get()
