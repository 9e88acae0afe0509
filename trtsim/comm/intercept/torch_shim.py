"""Installing the guarded torch.distributed functions for the length of a launch.

The names of the ``torch.distributed`` package are replaced and restored afterwards; torch's
internals (``torch.distributed.distributed_c10d``) keep the real functions, so trtsim's own
process-backend traffic and torch's object collectives underneath run unguarded. Code that
bound a function by name before the launch (``from torch.distributed import all_reduce`` at
import) keeps the real one on the inproc backend; process-backend ranks import the rank
program after the install, so they get the guarded ones.

Not covered (each raises ``NotImplementedError`` naming itself): the coalesced and single
variants, ``new_subgroups*``, ``split_group``, ``shrink_group``, ``init_device_mesh``;
``torch.distributed._functional_collectives`` and custom communicators (NCCL bindings,
custom all-reduce) bypass torch.distributed and are not seen at all.
"""

from __future__ import annotations

import contextlib
import types

import torch.distributed as tdist

from .torch_calls import make_collective_functions
from .torch_groups import make_group_functions
from .torch_p2p import make_p2p_functions

UNSUPPORTED = ("all_gather_coalesced", "all_reduce_coalesced", "all_gather_single",
               "reduce_scatter_single", "new_subgroups", "new_subgroups_by_enumeration",
               "split_group", "shrink_group", "init_device_mesh")


def _unsupported(name: str):
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"torch.distributed.{name} is not covered by trtsim's "
                                  "interception")
    refuse.__name__ = name
    return refuse


def shims(real) -> dict:
    """Every replaced name of torch.distributed -> its guarded stand-in."""
    out = {**make_group_functions(real), **make_collective_functions(real),
           **make_p2p_functions(real)}
    out.update({name: _unsupported(name) for name in UNSUPPORTED if hasattr(real, name)})
    return out


@contextlib.contextmanager
def installed():
    """torch.distributed's names replaced by the guarded stand-ins inside the block; yields
    the namespace of the real functions."""
    names = [n for n in dir(tdist) if not n.startswith("_")]
    saved = {n: getattr(tdist, n) for n in names}
    real = types.SimpleNamespace(**saved)
    replacement = shims(real)
    for name, fn in replacement.items():
        setattr(tdist, name, fn)
    try:
        yield real
    finally:
        for name in replacement:
            setattr(tdist, name, saved[name])
