"""Installing the guarded torch.distributed functions for the length of a launch.

The names of the ``torch.distributed`` package (and the functional collectives of
``torch.distributed._functional_collectives``) are replaced and restored afterwards; torch's
internals (``torch.distributed.distributed_c10d``) keep the real functions, so trtsim's own
process-backend traffic and torch's object collectives underneath run unguarded. The install
is counted (``scoped_install``): launches in several threads share it, and every stand-in
calls the real function when no rank runs it (outside a launch, or in a thread of no rank),
so a module that bound a stand-in by name during a launch holds a harmless one after it.
Code that bound a function by name before the launch (``from torch.distributed import
all_reduce`` at import) keeps the real one on the inproc backend; process-backend ranks
import the rank program after the install, so they get the guarded ones.

Not covered (each raises ``NotImplementedError`` naming itself): ``split_group``,
``shrink_group``; custom communicators (NCCL bindings, custom all-reduce)
bypass torch.distributed and are not seen at all.
"""

from __future__ import annotations

import functools
import types

import torch.distributed as tdist

from ..current import current
from ..scoped_install import current as current_install, scoped
from .torch_calls import make_collective_functions
from .torch_funcol import FUNCOL, make_funcol_functions
from .torch_groups import make_group_functions
from .torch_p2p import make_p2p_functions

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


def _install():
    import torch.distributed._functional_collectives as funcol
    names = [n for n in dir(tdist) if not n.startswith("_")]
    saved = {n: getattr(tdist, n) for n in names}
    real = types.SimpleNamespace(**saved)
    replacement = shims(real)
    saved_funcol = {n: getattr(funcol, n) for n in FUNCOL if hasattr(funcol, n)}
    # only what this torch has: functional collectives come and go between releases
    funcol_shims = {n: _in_ranks_only(fn, saved_funcol[n]) for n, fn in
                    make_funcol_functions(types.SimpleNamespace(**saved_funcol)).items()
                    if n in saved_funcol}
    for name, fn in replacement.items():
        setattr(tdist, name, fn)
    for name, fn in funcol_shims.items():
        setattr(funcol, name, fn)
    return real, saved, replacement, funcol, saved_funcol


def _uninstall(held) -> None:
    real, saved, replacement, funcol, saved_funcol = held
    for name in replacement:
        setattr(tdist, name, saved[name])
    for name, fn in saved_funcol.items():
        setattr(funcol, name, fn)


def standins() -> dict[int, object]:
    """While installed: id(real function) -> its stand-in, for modules that bound the real
    ones by name before the launch (``inproc.rank_local`` gives each rank the stand-ins)."""
    held = current_install("torch.distributed")
    if held is None:
        return {}
    _real, saved, replacement, funcol, saved_funcol = held
    out = {id(saved[n]): fn for n, fn in replacement.items() if callable(saved[n])}
    out.update({id(fn): getattr(funcol, n) for n, fn in saved_funcol.items()})
    return out


def installed():
    """torch.distributed's names replaced by the guarded stand-ins inside the block (counted:
    launches in several threads share one install); yields the namespace of the real
    functions."""
    import contextlib

    @contextlib.contextmanager
    def block():
        with scoped("torch.distributed", _install, _uninstall) as held:
            yield held[0]
    return block()
