"""torch's functional collectives (``torch.distributed._functional_collectives``) inside
launched ranks, guarded.

Each call is one guarded collective on the communicator its ``group`` names (a process group,
a group name, a 1-D device mesh or ``(mesh, dim)``). Inproc computes the result (a plain
tensor: waiting on it is a no-op); the process backends run torch's own function after the
guard (its result waits as usual). The coalesced forms run as their single calls one after
another, on every backend, so the guard sees the same calls everywhere. The deprecated names
(``all_gather_tensor``, ``reduce_scatter_tensor``, ...) reach these through their module.
The autograd variants and compiled code call torch's ops directly and are not seen.
"""

from __future__ import annotations

import torch

from .groups import state
from ...calls.ops import Op

FUNCOL = ("broadcast", "all_reduce", "all_gather_single", "reduce_scatter_single",
          "all_to_all_single", "all_reduce_coalesced", "all_gather_single_coalesced",
          "reduce_scatter_single_coalesced")


def _process_group(group, tag: str):
    import torch.distributed._functional_collectives as funcol
    from torch._C._distributed_c10d import _resolve_process_group
    resolved = funcol._resolve_group(group, tag)
    return resolved if isinstance(resolved, torch.distributed.ProcessGroup) else \
        _resolve_process_group(resolved)


def make_funcol_functions(real):
    """The functional collectives, bound to the real ones (``real``)."""

    def call(name, group, tag, op, payload, real_call, root=None, reduce_op=None):
        st = state(f"funcol.{name}")
        comm = st.comm(_process_group(group, tag), f"funcol.{name}")
        run = real_call if st.api.real else None
        return st, st.api.collective(comm, op, payload, f"funcol.{name}", root,
                                     reduce_op.lower() if reduce_op else None, run)

    def broadcast(self, src, group, tag=""):
        st, value = call("broadcast", group, tag, Op.BROADCAST, self,
                         lambda: real.broadcast(self, src, group, tag), root=src)
        return value

    def all_reduce(self, reduceOp, group, tag=""):
        st, value = call("all_reduce", group, tag, Op.ALLREDUCE, self,
                         lambda: real.all_reduce(self, reduceOp, group, tag), reduce_op=reduceOp)
        return value

    def all_gather_single(self, gather_dim, group, tag=""):
        st, value = call("all_gather_single", group, tag, Op.ALLGATHER, self,
                         lambda: real.all_gather_single(self, gather_dim, group, tag))
        return value if st.api.real else torch.cat(value, dim=gather_dim)

    def reduce_scatter_single(self, reduceOp, scatter_dim, group, tag=""):
        n = len(state("funcol.reduce_scatter_single").comm(_process_group(group, tag),
                                                            "funcol.reduce_scatter_single").ranks)
        parts = [p.contiguous() for p in self.chunk(n, dim=scatter_dim)]
        st, value = call("reduce_scatter_single", group, tag, Op.REDUCE_SCATTER, parts,
                         lambda: real.reduce_scatter_single(self, reduceOp, scatter_dim, group,
                                                            tag), reduce_op=reduceOp)
        return value

    def all_to_all_single(self, output_split_sizes, input_split_sizes, group, tag=""):
        n = len(state("funcol.all_to_all_single").comm(_process_group(group, tag),
                                                        "funcol.all_to_all_single").ranks)
        parts = list(self.split(list(input_split_sizes)) if input_split_sizes else self.chunk(n))
        st, value = call("all_to_all_single", group, tag, Op.ALLTOALL, parts,
                         lambda: real.all_to_all_single(self, output_split_sizes,
                                                        input_split_sizes, group, tag))
        return value if st.api.real else torch.cat(value)

    def all_reduce_coalesced(self, reduceOp, group, tag=""):
        return [all_reduce(t, reduceOp, group, tag) for t in self]

    def all_gather_single_coalesced(self, group, tag=""):
        return [all_gather_single(t, 0, group, tag) for t in self]

    def reduce_scatter_single_coalesced(self, reduceOp, scatter_dim, group, tag=""):
        return [reduce_scatter_single(t, reduceOp, d, group, tag)
                for t, d in zip(self, scatter_dim)]

    return {f.__name__: f for f in (
        broadcast, all_reduce, all_gather_single, reduce_scatter_single, all_to_all_single,
        all_reduce_coalesced, all_gather_single_coalesced, reduce_scatter_single_coalesced)}
