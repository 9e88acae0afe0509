"""Transfer sessions: the data plane of one request on one rank.

Generation first (TRT-LLM's gen-first flow): the receiving session sends each source context
rank a request-info message and posts the receive of that rank's piece; the sending session
posts the receives of the infos, and once an info arrived it packs the piece from its pool
(the valid blocks of each layer, its heads) and sends it. Everything is non-blocking, so
``wait_complete(blocking=False)`` only polls; ``blocking=True`` drives the session to its end.
Pieces travel as one flat tensor over the guarded p2p layer (label ``kv_transfer``), so they
show in the census and a lost piece is a deadlock the guard explains.
"""

from __future__ import annotations

import enum

import torch

from ..comm.distributed import Distributed
from ..layout.places import Peer
from ..state.kv_cache import KVCacheManager
from .transfer_plan import Piece, piece_numel

TAG_BASE = 1000


class SessionStatus(enum.Enum):
    TRANSFERRING = "transferring"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class WaitResult(enum.Enum):
    COMPLETED = "completed"
    FAILED = "failed"
    TIMEOUT = "timeout"


def transfer_tag(request_id: int) -> int:
    return TAG_BASE + request_id


class _Session:
    """What both directions share: status, fault injection, the iteration it opened in."""

    def __init__(self, request_id: int, pieces: list[Piece], opened_iter: int,
                 fault: str | None, timeout_iters: int | None):
        self.request_id, self.pieces = request_id, pieces
        self.status = SessionStatus.TRANSFERRING
        self.opened_iter, self.timeout_iters = opened_iter, timeout_iters
        self.fault = fault
        self.num_bytes = 0

    def is_completed(self) -> bool:
        return self.status == SessionStatus.COMPLETED

    def has_failed(self) -> bool:
        return self.status == SessionStatus.FAILED

    @property
    def is_done(self) -> bool:
        """Completed, failed or cancelled here: ready for consensus."""
        return self.status != SessionStatus.TRANSFERRING

    def cancel(self) -> None:
        self.status = SessionStatus.CANCELLED

    def _finish(self) -> WaitResult:
        # An injected fault lets the data move (peers must not hang) and then fails or
        # cancels the outcome on this rank only: consensus must carry it to the others.
        if self.fault == "fail":
            self.status = SessionStatus.FAILED
            return WaitResult.FAILED
        if self.fault == "cancel":
            self.status = SessionStatus.CANCELLED
            return WaitResult.FAILED
        self.status = SessionStatus.COMPLETED
        return WaitResult.COMPLETED

    def _timed_out(self, iteration: int) -> bool:
        return self.timeout_iters is not None and iteration - self.opened_iter > self.timeout_iters


class TxSession(_Session):
    """The sending side on a context rank."""

    def __init__(self, dist: Distributed, kv: KVCacheManager, gen_instance: str,
                 request_id: int, pieces: list[Piece], fault: str | None = None,
                 timeout_iters: int | None = None):
        super().__init__(request_id, pieces, dist.iteration, fault, timeout_iters)
        self.dist, self.kv, self.gen_instance = dist, kv, gen_instance
        tag = transfer_tag(request_id)
        self._infos = {p.gen_rank: dist.irecv_object(Peer(gen_instance, p.gen_rank), tag,
                                                      label="kv_req_info") for p in pieces}
        self._sends: dict[int, object] = {}

    def wait_complete(self, blocking: bool) -> WaitResult | None:
        """Progress the session; None while it is still moving."""
        if self.status != SessionStatus.TRANSFERRING:
            return _RESULT[self.status]
        for piece in self.pieces:
            info = self._infos[piece.gen_rank]
            if piece.gen_rank in self._sends or not (blocking or info.is_completed()):
                continue
            asked = info.wait()
            if asked != (self.request_id, piece.layers, piece.heads):
                raise RuntimeError(f"request {self.request_id}: generation rank "
                                   f"{piece.gen_rank} asked for {asked}, the plan says "
                                   f"{(piece.layers, piece.heads)}")
            data = torch.cat([self.kv.read(self.request_id, layer, piece.heads).reshape(-1)
                              for layer in piece.layers]) if piece.layers else torch.empty(0)
            self.num_bytes += data.numel() * data.element_size()
            self._sends[piece.gen_rank] = self.dist.isend_tensor(
                data, Peer(self.gen_instance, piece.gen_rank), transfer_tag(self.request_id),
                label="kv_transfer")
        if len(self._sends) == len(self.pieces):
            if blocking:
                for h in self._sends.values():
                    h.wait()
            if all(h.is_completed() for h in self._sends.values()):
                return self._finish()
        if self._timed_out(self.dist.iteration):
            return WaitResult.TIMEOUT
        return None


class RxSession(_Session):
    """The receiving side on a generation rank."""

    def __init__(self, dist: Distributed, kv: KVCacheManager, ctx_instance: str,
                 request_id: int, length: int, pieces: list[Piece], fault: str | None = None,
                 timeout_iters: int | None = None):
        super().__init__(request_id, pieces, dist.iteration, fault, timeout_iters)
        self.dist, self.kv = dist, kv
        tag = transfer_tag(request_id)
        cfg = kv.config
        self._recvs = {}
        for p in pieces:
            peer = Peer(ctx_instance, p.ctx_rank)
            dist.isend_object((request_id, p.layers, p.heads), peer, tag, label="kv_req_info")
            buf = torch.empty(piece_numel(p, cfg, length), dtype=kv.pools[kv.layers[0]].dtype)
            self._recvs[p.ctx_rank] = dist.irecv_tensor(buf, peer, tag, label="kv_transfer")
        self._stored: set[int] = set()

    def wait_complete(self, blocking: bool) -> WaitResult | None:
        if self.status != SessionStatus.TRANSFERRING:
            return _RESULT[self.status]
        for piece in self.pieces:
            handle = self._recvs[piece.ctx_rank]
            if piece.ctx_rank in self._stored or not (blocking or handle.is_completed()):
                continue
            self._store(piece, handle.wait())
            self._stored.add(piece.ctx_rank)
        if len(self._stored) == len(self.pieces):
            return self._finish()
        if self._timed_out(self.dist.iteration):
            return WaitResult.TIMEOUT
        return None

    def _store(self, piece: Piece, flat: torch.Tensor) -> None:
        """Scatter a received piece into this rank's pool, layer by layer."""
        cfg, offset = self.kv.config, 0
        nheads = piece.heads[1] - piece.heads[0]
        length = self.kv.lengths[self.request_id]
        for layer in piece.layers:
            n = cfg.valid_blocks(layer, length)
            shape = (n, cfg.kv_factor, nheads, cfg.tokens_per_block, cfg.head_dim)
            count = n * cfg.kv_factor * nheads * cfg.tokens_per_block * cfg.head_dim
            self.kv.write(self.request_id, layer, piece.heads, flat[offset:offset + count].view(shape))
            offset += count
        self.num_bytes += flat.numel() * flat.element_size()


_RESULT = {SessionStatus.COMPLETED: WaitResult.COMPLETED, SessionStatus.FAILED: WaitResult.FAILED,
           SessionStatus.CANCELLED: WaitResult.FAILED}
