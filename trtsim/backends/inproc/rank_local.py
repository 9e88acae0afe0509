"""Per-rank module globals on the inproc backend (``launch(..., rank_local=("vllm",))``).

Design note. Serving frameworks keep their process groups in module globals (vLLM's and
SGLang's ``parallel_state._WORLD``, ``_TP``, ``_PP``, ``_DP`` and the ``_groups`` registry
they mutate in place). One process means one copy of each module, so the ranks of an inproc
launch would share them and silently use each other's groups. But inproc ranks only ever
change hands in the hub, between two turns, so each rank can have exactly its own globals:
the hub swaps the contents of the named modules' ``__dict__`` at every hand-over
(``switch_to``), saving the outgoing rank's bindings and installing the incoming one's. The
module objects, their functions and classes stay the same objects for every rank (so
``isinstance`` holds across ranks and a module imported once at the top of a test file
works); what a function reads through its globals is the running rank's.

A rank's first turn starts from the modules as they were before the launch, with every value
that holds state copied deeply: the containers (dict, list, set, deque and their subclasses,
bytearray) and the objects of classes the named modules define that carry attributes
(SGLang's ``runtime_context._PARALLEL``, a context object its functions fill in place), one
memo per rank, so two modules that name one object still share its copy. Functions, classes,
modules, enum members and attribute-less sentinels stay the same objects -- except the real
torch.distributed functions a module bound by name before the launch (SGLang binds
``all_gather_single`` at import), which become their guarded stand-ins. A module first imported during the launch is
caught as it finishes executing (an import hook): its fresh state becomes every other
rank's starting point, and its parent package learns the submodule in every rank's state.
After the launch every module gets back the bindings it had before it (modules imported
during the launch: the state they had right after import).

Limits: state that lives elsewhere than in the named modules' globals is shared -- class
attributes (``GroupCoordinator._instances``), objects of other packages' classes a global
refers to, C extension state, caches on function objects (``functools.lru_cache``); a value
that cannot be copied is shared too; a stateful object captured as a default argument keeps
the original, where the module's global is the rank's copy. And the process is one: its file
descriptors, environment, working directory and signal handlers are every rank's.
The cost is a dict copy of the named modules per hand-over between different ranks.
"""

from __future__ import annotations

import collections
import copy
import enum
import sys
import threading
import types
from typing import Iterable

from ...comm.import_hook import AfterImport
from ...comm.launch_config import in_package

_CONTAINERS = (dict, list, set, bytearray, collections.deque)



def fresh(state: dict, prefixes: tuple[str, ...], memo: dict,
          standins: dict | None = None) -> dict:
    """A rank's first bindings of one module: the pristine ones, with the values that hold
    state copied deeply through ``memo`` (the rank's, shared by all its modules), and
    ``standins`` (id(function) -> replacement) in place of the functions they replace."""
    standins = standins or {}
    return {k: standins.get(id(v)) or _own(v, prefixes, memo) for k, v in state.items()}


def _own(value, prefixes: tuple[str, ...], memo: dict):
    cls = type(value)
    holds_state = isinstance(value, _CONTAINERS) or (
        in_package(getattr(cls, "__module__", ""), prefixes) and not isinstance(value, type)
        and not isinstance(value, enum.Enum) and _has_attributes(value))
    if not holds_state:
        return value
    try:
        return copy.deepcopy(value, memo)
    except Exception:  # noqa: BLE001 - what cannot be copied is shared (the module note)
        return value


def _has_attributes(value) -> bool:
    """Whether an object holds instance state, in its ``__dict__`` or its slots."""
    if getattr(value, "__dict__", None):
        return True
    for klass in type(value).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot not in ("__dict__", "__weakref__"):
                try:
                    object.__getattribute__(value, slot)
                    return True
                except AttributeError:
                    pass
    return False


def _memo() -> dict:
    """A deepcopy memo that keeps every module as itself."""
    return {id(m): m for m in list(sys.modules.values()) if m is not None}



class RankLocalModules:
    """The per-rank globals of the modules named by ``prefixes``, for ``num_ranks`` ranks.

    Invariant: while rank r holds the turn the modules' dicts hold r's bindings and
    ``self.owner == r``; every other rank's bindings are in ``self.saved`` (or not made
    yet: it starts from ``self.pristine``)."""

    def __init__(self, prefixes: tuple[str, ...], num_ranks: int, standins: dict | None = None):
        self.prefixes = prefixes
        self.standins = standins or {}
        self.modules: dict[str, types.ModuleType] = {}
        self.before: dict[str, dict] = {}         # bindings before the launch (restored after)
        self.pristine: dict[str, dict] = {}       # where a rank's first turn starts
        self.saved: list[dict[str, dict] | None] = [None] * num_ranks
        self.memos: list[dict | None] = [None] * num_ranks      # each rank's deepcopy memo
        self.owner: int | None = None
        self._lock = threading.Lock()             # imports may run on rank threads
        for name, module in list(sys.modules.items()):
            if module is not None and in_package(name, prefixes):
                self._adopt(name, module)

    def _adopt(self, name: str, module: types.ModuleType) -> None:
        state = dict(module.__dict__)
        self.modules[name] = module
        self.before.setdefault(name, state)
        self.pristine[name] = state

    # -- the hub ---------------------------------------------------------------------------
    def switch_to(self, r: int) -> None:
        """Install rank ``r``'s bindings (the hub, before ``r`` gets the turn)."""
        if r == self.owner:
            return
        with self._lock:
            if self.owner is not None:
                self.saved[self.owner] = {n: dict(m.__dict__) for n, m in self.modules.items()}
            mine = self.saved[r]
            for name, module in self.modules.items():
                state = mine.get(name) if mine is not None else None
                _install(module, state if state is not None else self._fresh(r, name))
            self.owner = r

    def _fresh(self, r: int, name: str) -> dict:
        memo = self.memos[r]
        if memo is None:
            memo = self.memos[r] = _memo()
        return fresh(self.pristine[name], self.prefixes, memo, self.standins)

    def restore(self) -> None:
        """Every module as it was before the launch."""
        with self._lock:
            for name, module in self.modules.items():
                _install(module, self.before[name])
            self.owner = None

    # -- the import hook -------------------------------------------------------------------
    def imported(self, name: str, module: types.ModuleType) -> None:
        """``name`` finished its first execution in the owner's turn: the other ranks start
        from it as it is now, and see it as an attribute of its parent package."""
        with self._lock:
            self._adopt(name, module)
            self.before[name] = self.pristine[name]
            # The other ranks start from this state at their next turn (``switch_to``); the
            # import system binds the submodule on the parent in the owner's bindings only.
            parent, _, child = name.rpartition(".")
            for state in [self.before, self.pristine, *(s for s in self.saved if s)]:
                bindings = state.get(parent)
                if bindings is not None:
                    bindings[child] = module


def _install(module: types.ModuleType, state: dict) -> None:
    d = module.__dict__
    d.clear()
    d.update(state)


class installed:
    """``with installed(prefixes, n, standins) as modules:`` per-rank globals for the block
    (None when ``prefixes`` is empty: nothing is swapped)."""

    def __init__(self, prefixes: Iterable[str], num_ranks: int, standins: dict | None = None):
        self.prefixes, self.num_ranks, self.standins = tuple(prefixes), num_ranks, standins
        self.modules: RankLocalModules | None = None
        self._finder: AfterImport | None = None

    def __enter__(self) -> RankLocalModules | None:
        if not self.prefixes:
            return None
        self.modules = RankLocalModules(self.prefixes, self.num_ranks, self.standins)
        modules, prefixes = self.modules, self.prefixes
        self._finder = AfterImport(lambda name: in_package(name, prefixes),
                                   lambda module: modules.imported(module.__name__, module))
        sys.meta_path.insert(0, self._finder)
        return self.modules

    def __exit__(self, *exc) -> None:
        if self.modules is not None and self._finder is not None:
            sys.meta_path.remove(self._finder)
            self.modules.restore()


__all__ = ["RankLocalModules", "installed", "fresh"]
