"""torch's c10d state, one copy per inproc rank: real ProcessGroups inside one process.

Design note. torch.distributed keeps its process groups in module state: the ``_World``
object ``distributed_c10d._world`` (default group, group maps, names, tags, the group
counter) and, in C++, a registry of groups by name that functional collectives resolve.
Ranks of an inproc launch share the process, so for the length of a launch that intercepts
torch.distributed:

- ``distributed_c10d._world`` is a ``RankWorlds``: every attribute read or write goes to the
  running rank's own ``_World`` (the rank is the current ``Distributed``, ``comm.current``),
  and outside a rank to the process's own world, untouched. ``_World`` is torch's declared
  extension point for this ("Experimental extension point to override it"), and the one its
  own threaded test process group uses.
- The C++ group registry is made thread-local (torch's thread isolation mode): inproc ranks
  that use torch.distributed run as threads (``runners.ThreadRunner``), so each rank resolves
  group names among its own groups.
- ``init_process_group`` installs a ``sys.excepthook`` per call; the process's hook comes back
  afterwards (a hook a rank installs otherwise would outlive the launch).
- The process's standard output and error descriptors come back afterwards too. Rank code
  may point them elsewhere for a while (vLLM silences fd 1 around ``new_group``): the ranks
  share the process's descriptors, and two ranks doing so with turns interleaved restore
  each other's redirection, which would leave fd 1 on /dev/null after the launch.

What stays shared: ``distributed_c10d._backend`` and ``_default_pg_init_method`` (every rank
writes the same values), and torch's caches outside ``_World``.
"""

from __future__ import annotations

import os
import sys

import torch.distributed.distributed_c10d as c10d
from torch._C._distributed_c10d import _set_thread_isolation_mode  # type: ignore[attr-defined]

from ...comm.current import current
from ...comm.scoped_install import scoped
from ...intercept.rank_api import RankAPI
from ...intercept.torch.groups import TorchRank


class RankWorld(c10d._World):
    """One rank's c10d state: ``_World``'s maps held here instead of in module globals."""

    def __init__(self):
        super().__init__()
        self._pg_map: dict = {}
        self._pg_names: dict = {}
        self._pg_group_ranks: dict = {}
        self._pg_backend_config: dict = {}
        self._tags_to_pg: dict = {}
        self._pg_to_tag: dict = {}
        self._group_count = 0

    pg_map = property(lambda self: self._pg_map)
    pg_names = property(lambda self: self._pg_names)
    pg_group_ranks = property(lambda self: self._pg_group_ranks)
    pg_backend_config = property(lambda self: self._pg_backend_config)
    tags_to_pg = property(lambda self: self._tags_to_pg)
    pg_to_tag = property(lambda self: self._pg_to_tag)

    @property
    def group_count(self) -> int:
        return self._group_count

    @group_count.setter
    def group_count(self, value: int) -> None:
        self._group_count = value


class RankWorlds:
    """Stands in for ``distributed_c10d._world``: the running rank's ``RankWorld`` (kept by its
    intercepted torch state, ``TorchRank.c10d``), or the process's own world outside a rank
    and in ranks of launches that run real process groups."""

    def __init__(self, outer):
        object.__setattr__(self, "_outer", outer)

    def _current(self):
        dist = current()
        torch_state = None if dist is None else RankAPI.of(dist).extension(TorchRank)
        world = None if torch_state is None else torch_state.c10d
        return self._outer if world is None else world

    def __getattr__(self, name):
        return getattr(self._current(), name)

    def __setattr__(self, name, value):
        setattr(self._current(), name, value)


STD_FDS = (1, 2)


def _install() -> tuple:
    outer, hook = c10d._world, sys.excepthook
    fds = {fd: os.dup(fd) for fd in STD_FDS}
    c10d._world = RankWorlds(outer)  # type: ignore[assignment]  # a per-rank proxy of _World
    _set_thread_isolation_mode(True)
    return outer, hook, fds


def _uninstall(saved: tuple) -> None:
    outer, hook, fds = saved
    _set_thread_isolation_mode(False)
    c10d._world = outer
    sys.excepthook = hook
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    for fd, copy in fds.items():
        os.dup2(copy, fd)
        os.close(copy)


def installed():
    """``with installed():`` per-rank c10d state while the block runs (counted: launches in
    several threads share one install)."""
    return scoped("torch.distributed.distributed_c10d._world", _install, _uninstall)


__all__ = ["RankWorld", "RankWorlds", "installed"]
