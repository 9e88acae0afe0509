"""Installing the guarded torch.distributed functions for the length of a launch.

The names of the ``torch.distributed`` package are replaced and restored afterwards, and so
are the collectives other torch.distributed modules imported by name (``by_name``: DTensor's
``scatter``/``broadcast``) and the communicating ops of ``torch.ops._c10d_functional``
(``funcol``: the functional collectives, their autograd formulas, DTensor's
redistributions); global module forward hooks keep which module's forward made each backward
collective (``module_trail``). torch's internals (``torch.distributed.distributed_c10d``)
keep the real functions, so trtsim's own process-backend traffic and torch's object
collectives underneath run unguarded. The install is counted (``scoped_install``): launches
in several threads share it, and every stand-in calls the real function when no rank runs it
(outside a launch, or in a thread of no rank). A module first imported during a launch that
bound a stand-in by name (``from torch.distributed import all_reduce`` run inside a rank)
holds the real function again once the last launch ends
(``scoped_install.rebind_late_imports``). Code that bound a function by name before the
launch keeps the real one on the inproc backend (``backends.inproc.rank_local`` gives the
ranks of the modules it names the stand-ins); process-backend ranks import the rank program
after the install, so they get the guarded ones.

Not covered (each raises ``NotImplementedError`` naming itself): ``split_group``,
``shrink_group``; custom communicators (NCCL bindings, custom all-reduce)
bypass torch.distributed and are not seen at all.
"""

from __future__ import annotations

import contextlib
import functools
import types
from typing import Iterator, NamedTuple

import torch.distributed as tdist

from ...comm.current import current
from ...comm.scoped_install import Originals, current as current_install, scoped
from . import by_name, funcol, module_trail
from .collectives import make_collective_functions
from .group_functions import make_group_functions
from .p2p import make_p2p_functions

UNSUPPORTED = ("split_group", "shrink_group")


def _unsupported(name: str):
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"torch.distributed.{name} is not covered by trtsim's "
                                  "interception")
    refuse.__name__ = name
    return refuse


def _in_ranks_only(standin, real_fn):
    """``standin`` inside a launched rank, the real function anywhere else."""
    if not callable(real_fn) or isinstance(standin, type):
        return standin

    @functools.wraps(standin)
    def guarded(*args, **kwargs):
        if current() is None:
            return real_fn(*args, **kwargs)
        return standin(*args, **kwargs)
    return guarded


def shims(real) -> dict:
    """Every replaced name of torch.distributed -> its guarded stand-in."""
    out = {**make_group_functions(real), **make_collective_functions(real),
           **make_p2p_functions(real)}
    out.update({name: _unsupported(name) for name in UNSUPPORTED if hasattr(real, name)})
    return {name: _in_ranks_only(fn, getattr(real, name, None)) for name, fn in out.items()}


def communicating_names(real) -> tuple[str, ...]:
    """The names of torch.distributed's collective and point-to-point functions (what a
    module that imports one by name must see guarded)."""
    names = {**make_collective_functions(real), **make_p2p_functions(real)}
    return tuple(sorted(n for n, fn in names.items() if not isinstance(fn, type)))


class _Held(NamedTuple):
    """The install: the real functions, and what replaced them where."""

    real: types.SimpleNamespace            # every public name of torch.distributed, as found
    saved: dict                            # name -> the real object
    replacement: dict                      # name -> its stand-in in torch.distributed
    ops: list                              # the functional ops wrapped (``funcol.install``)
    by_name: tuple                         # the by-name bindings rebound (``by_name.install``)
    hooks: list                            # removes the global module hooks (``module_trail``)


def _install() -> _Held:
    names = [n for n in dir(tdist) if not n.startswith("_")]
    saved = {n: getattr(tdist, n) for n in names}
    real = types.SimpleNamespace(**saved)
    replacement = shims(real)
    for name, fn in replacement.items():
        setattr(tdist, name, fn)
    swaps = {id(saved[n]): (saved[n], replacement[n]) for n in communicating_names(real)}
    return _Held(real, saved, replacement, funcol.install(), by_name.install(swaps),
                 module_trail.install())


def _uninstall(held: _Held) -> None:
    for name in held.replacement:
        setattr(tdist, name, held.saved[name])
    funcol.uninstall(held.ops)
    by_name.uninstall(held.by_name)
    for remove in held.hooks:
        remove()


def _originals(held: _Held) -> Originals:
    """id(stand-in) -> (stand-in, its real function): what a module imported during the
    install gets back in place of a stand-in it bound."""
    pairs = [(fn, held.saved[n]) for n, fn in held.replacement.items()]
    return {id(fn): (fn, functools.partial(_same, real)) for fn, real in pairs if fn is not real}


def _same(value, _bound_as: str):
    return value


def standins() -> dict[int, object]:
    """While installed: id(real function) -> its stand-in, for modules that bound the real
    ones by name before the launch (``backends.inproc.rank_local`` gives each rank the
    stand-ins)."""
    held = current_install("torch.distributed")
    if held is None:
        return {}
    return {id(held.saved[n]): fn for n, fn in held.replacement.items()
            if callable(held.saved[n])}


@contextlib.contextmanager
def installed() -> Iterator[types.SimpleNamespace]:
    """torch.distributed's names replaced by the guarded stand-ins inside the block (counted:
    launches in several threads share one install); yields the namespace of the real
    functions. Modules imported inside the block hold the real functions after the last
    holder leaves."""
    with scoped("torch.distributed", _install, _uninstall, _originals) as held:
        yield held.real
