"""Process-wide patches that several launches may hold at once: installed by the first,
removed by the last.

Interception replaces names of shared modules (torch.distributed's functions, c10d's world,
mpi4py in ``sys.modules``, an iteration marker). Two launches in two threads, or a launch
inside another, must not restore each other's saved originals out of order, so every such
patch goes through ``scoped``: under one lock, a depth count per patch key; the first holder
installs, the last one restores. Between the two the patch serves every launch, so what it
installs must tell the launches apart by itself (the stand-ins look up the current rank, and
outside any rank they do what the originals do).

A module first imported while a patch is held may bind a stand-in by name (``from
torch.distributed import all_reduce`` run inside a rank). When the last holder leaves, the
module globals of the modules that entered ``sys.modules`` meanwhile are bound back to the
originals (``rebind_late_imports``), so no module holds a stand-in after the launches: the
patch says which objects are its stand-ins and how to get each one's original
(``originals``). Modules imported before the patch are not touched (they bound the originals),
nor are stand-ins kept elsewhere than in a module's globals (an attribute of an object).

This is the one place that holds process-wide state (the counts): patches of shared modules
are process-wide by nature.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import types
from dataclasses import dataclass
from typing import Any, Callable, Iterator

# id(stand-in) -> (the stand-in, a function giving its original -- or NO_ORIGINAL -- given
# the name a module bound it under: one stand-in may stand for several originals)
Originals = dict[int, tuple[Any, Callable[[str], Any]]]


class _NoOriginal:
    """What an ``Originals`` function returns when the stand-in has no original (the module
    it stands in for is not installed): a module global naming it is removed."""

    def __repr__(self) -> str:
        return "NO_ORIGINAL"


NO_ORIGINAL = _NoOriginal()

_LOCK = threading.RLock()


@dataclass
class _Held:
    """One patch while it is held: its holders, what its install returned, and the modules
    ``sys.modules`` had when it was installed (None: the patch rebinds nothing)."""

    depth: int
    value: Any
    before: dict[str, Any] | None


_HELD: dict[str, _Held] = {}


@contextlib.contextmanager
def scoped(key: str, install: Callable[[], Any], uninstall: Callable[[Any], None],
           originals: Callable[[Any], Originals] | None = None) -> Iterator[Any]:
    """Hold the patch ``key`` for the block; yields what ``install`` returned (the first
    holder's call of it). ``uninstall`` gets that value when the last holder leaves; then,
    with ``originals`` (given that value: the patch's stand-ins), the modules first imported
    while the patch was held get the originals in place of the stand-ins they bound."""
    with _LOCK:
        held = _HELD.get(key)
        if held is None:
            before = dict(sys.modules) if originals is not None else None
            held = _HELD[key] = _Held(0, install(), before)
        held.depth += 1
    try:
        yield held.value
    finally:
        with _LOCK:
            held.depth -= 1
            if held.depth == 0:
                del _HELD[key]
                found = originals(held.value) if originals is not None else {}
                try:
                    uninstall(held.value)
                finally:
                    if held.before is not None:
                        rebind_late_imports(held.before, found)


def rebind_late_imports(before: dict[str, Any], originals: Originals) -> list[str]:
    """Bind every global of the modules in ``sys.modules`` that ``before`` did not hold (by
    name and object) that names a stand-in of ``originals`` to its original (removed where
    there is none, or it cannot be had: its import fails); the ``module.name``s changed. Called
    with the patch removed, under the patches' lock: an original that must be imported is
    imported as without the patch."""
    changed: list[str] = []
    if not originals:
        return changed
    for name, module in list(sys.modules.items()):
        if before.get(name) is module or not isinstance(module, types.ModuleType):
            continue
        namespace = module.__dict__
        for attr, value in list(namespace.items()):
            hit = originals.get(id(value))
            if hit is None or hit[0] is not value:
                continue
            try:
                real = hit[1](attr)
            except Exception:  # noqa: BLE001 - an import that fails here failed without the patch
                real = NO_ORIGINAL
            if real is NO_ORIGINAL:
                namespace.pop(attr, None)
            else:
                namespace[attr] = real
            changed.append(f"{name}.{attr}")
    return changed


@contextlib.contextmanager
def holding(key: str) -> Iterator[Any]:
    """The patches' lock for the block (no patch is installed or removed meanwhile); yields
    what the patch ``key``'s install returned while it is held, else None."""
    with _LOCK:
        held = _HELD.get(key)
        yield held.value if held else None


def current(key: str):
    """What the patch ``key``'s install returned, while it is held (else None)."""
    with _LOCK:
        held = _HELD.get(key)
        return held.value if held else None


def depth(key: str) -> int:
    """How many holders the patch ``key`` has now (0: not installed)."""
    with _LOCK:
        held = _HELD.get(key)
        return held.depth if held else 0


__all__ = ["NO_ORIGINAL", "Originals", "scoped", "rebind_late_imports", "holding", "current",
           "depth"]
