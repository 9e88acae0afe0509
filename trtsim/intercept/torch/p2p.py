"""torch.distributed's point-to-point calls inside launched ranks, guarded: ``send``/``recv``
(``recv`` returns the sender's global rank), ``isend``/``irecv`` (handles), ``P2POp`` with
``batch_isend_irecv``, and the object-list forms. Peers are global ranks (``group_dst`` and
``group_src`` are indices in ``group``); a receive must name its source."""

from __future__ import annotations

from .groups import state
from ...calls.ops import Op


def _peer(st, group, rank, group_rank, what: str) -> int:
    comm = st.comm(group, what)
    if rank is not None and group_rank is not None:
        raise ValueError(f"{what}: give a global rank or a group rank, not both")
    if group_rank is not None:
        return comm.ranks[group_rank]
    if rank is None:
        raise NotImplementedError(f"torch.distributed.{what} from any source (src=None) is not "
                                  "covered by trtsim's interception: name the source rank")
    comm.index(rank, f"{what}:")
    return rank


def make_p2p_functions(real):
    """The point-to-point functions, bound to the real torch.distributed ``real``."""

    def send(tensor, dst=None, group=None, tag=0, group_dst=None):
        st = state("send")
        peer = _peer(st, group, dst, group_dst, "send")
        st.api.send(Op.SEND_TENSOR, tensor, peer, tag, "torch.send", True,
                    lambda: real.send(tensor, dst, group, tag, group_dst))

    def recv(tensor, src=None, group=None, tag=0, group_src=None):
        st = state("recv")
        peer = _peer(st, group, src, group_src, "recv")
        st.api.recv(Op.RECV_TENSOR, tensor, peer, tag, "torch.recv", True,
                    lambda: real.recv(tensor, src, group, tag, group_src))
        return peer

    def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
        st = state("isend")
        peer = _peer(st, group, dst, group_dst, "isend")
        return st.api.send(Op.ISEND_TENSOR, tensor, peer, tag, "torch.isend", False,
                           lambda: real.isend(tensor, dst, group, tag, group_dst))

    def irecv(tensor, src=None, group=None, tag=0, group_src=None):
        st = state("irecv")
        peer = _peer(st, group, src, group_src, "irecv")
        return st.api.recv(Op.IRECV_TENSOR, tensor, peer, tag, "torch.irecv", False,
                           lambda: real.irecv(tensor, src, group, tag, group_src))

    class P2POp:
        """One send or receive of ``batch_isend_irecv`` (``op`` is ``isend`` or ``irecv``)."""

        def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
            op = getattr(op, "__wrapped__", op)       # the installed name wraps the stand-in
            if op not in (isend, irecv, real.isend, real.irecv):
                raise ValueError("P2POp: op must be torch.distributed.isend or irecv")
            self.op = isend if op in (isend, real.isend) else irecv
            self.tensor, self.peer, self.group, self.tag = tensor, peer, group, tag
            self.group_peer = group_peer

    def batch_isend_irecv(p2p_op_list):
        """Every op issued in order, each guarded; their handles."""
        return [p.op(p.tensor, p.peer, p.group, p.tag,
                     **({"group_dst": p.group_peer} if p.op is isend else
                        {"group_src": p.group_peer})) for p in p2p_op_list]

    def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None,
                         use_batch=False):
        st = state("send_object_list")
        peer = _peer(st, group, dst, group_dst, "send_object_list")
        st.api.send(Op.SEND_OBJECT, list(object_list), peer, 0, "torch.send_object_list", True,
                    lambda: real.send_object_list(object_list, dst, group, device, group_dst))

    def recv_object_list(object_list, src=None, group=None, device=None, group_src=None,
                         use_batch=False):
        st = state("recv_object_list")
        peer = _peer(st, group, src, group_src, "recv_object_list")
        got = st.api.recv(Op.RECV_OBJECT, None, peer, 0, "torch.recv_object_list", True,
                          lambda: real.recv_object_list(object_list, src, group, device,
                                                        group_src))
        if not st.api.real:
            object_list[:] = got
        return peer

    return {f.__name__: f for f in (send, recv, isend, irecv, P2POp, batch_isend_irecv,
                                     send_object_list, recv_object_list)}
