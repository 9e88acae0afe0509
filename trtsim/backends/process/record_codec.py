"""Call records as a ledger slot holds them: a fixed number of bytes, whatever the call.

A slot has ``SLOT_BYTES``; a record does not. Real frameworks reach their collectives through
dozens of frames (a purpose key is the whole chain of function names) and groups can span
thousands of ranks. So a slot holds a *template* of the record with:

- ``seq``, ``iteration``, ``clock`` zeroed (they live in numeric columns of the ledger);
- every long text field (purpose, label, call site, signature, communicator id) as a digest
  with a readable head, never truncated alone: two texts share a packed form only when they
  are equal (a 128-bit digest);
- the group as an id, not its rank list: a short list as is, an arithmetic progression as
  (start, stop, step) -- every group of trtsim's layouts and a world of any size -- and any
  other long list as its digest, which the launcher learns from the rank that uses it first
  (``announce``).

A reader unpacks a slot with ``like``, its own record on the same communicator: a packed
field whose digest matches ``like``'s value is ``like``'s value (the same text), one that
does not stays a readable form that differs from it. So comparing a peer's record with one's
own is exact, and the guard's decision, made on the match hash of the full fields, never
depends on the packing. The match hash (``match_hash``) digests the guard's ``match_key``.
"""

from __future__ import annotations

import hashlib
import pickle
from typing import Any

from ...guard.rules import MATCH_FIELDS, match_key
from ...calls.purpose_paths import frames_of, purpose_of
from ...calls.records import CallRecord

SLOT_BYTES = 2048
TEXT_INLINE = 256          # characters of a text field kept as is
RANKS_INLINE = 32          # ranks of a group listed as is
HEAD_NAMES = 6             # function names of a packed purpose key kept readable
_TEXTS = ("purpose", "label", "callsite", "signature", "comm", "api")
_BLANK_TEXTS: dict[str, Any] = {f: "" if f != "label" else None for f in _TEXTS}
_ITERATION = (*MATCH_FIELDS, "purpose").index("iteration")


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _match_prefix(rec: CallRecord) -> bytes:
    """The guard's ``match_key`` without the iteration, as bytes: the same for every call of
    one call site, so a rank computes it once per site."""
    key = match_key(rec)
    return repr(key[:_ITERATION] + key[_ITERATION + 1:]).encode()


def _hash(prefix: bytes, iteration: int) -> bytes:
    return hashlib.blake2b(prefix + b"|%d" % iteration, digest_size=16).digest()


def match_hash(rec: CallRecord) -> bytes:
    """16 bytes that two records share exactly when the guard finds no difference: a digest
    of the guard's own ``match_key``."""
    return _hash(_match_prefix(rec), rec.iteration)


# -- fields ------------------------------------------------------------------------------
def pack_text(field: str, text):
    """``text`` as is when short (or None), else ``("#", readable head, digest)``."""
    if text is None or len(text) <= TEXT_INLINE:
        return text
    if field == "purpose":
        names = frames_of(text)
        head = purpose_of([*names[:HEAD_NAMES], f"...{len(names) - HEAD_NAMES} more"])
    else:
        head = text[:80] + "..."
    return ("#", head, digest(text.encode()))


def unpack_text(packed, like):
    """The text of a packed field: ``like`` when its digest matches, else a readable form
    that differs from ``like``."""
    if not isinstance(packed, tuple):
        return packed
    _, head, hexdigest = packed
    if isinstance(like, str) and len(like) > TEXT_INLINE and digest(like.encode()) == hexdigest:
        return like
    return f"{head} #{hexdigest[:12]}"


def pack_ranks(ranks: tuple[int, ...]) -> tuple:
    """A group's ranks by id: ``("list", ranks)``, ``("range", start, stop, step)`` or
    ``("#", size, digest)``."""
    if len(ranks) <= RANKS_INLINE:
        return ("list", tuple(ranks))
    step = ranks[1] - ranks[0]
    if step > 0 and all(b - a == step for a, b in zip(ranks, ranks[1:])):
        return ("range", ranks[0], ranks[-1] + 1, step)
    return ("#", len(ranks), ranks_digest(ranks))


def ranks_digest(ranks: tuple[int, ...]) -> str:
    return digest(repr(tuple(ranks)).encode())


def unpack_ranks(packed: tuple, like: CallRecord | None, known: dict) -> tuple | None:
    """A group's ranks from its id: from ``like`` (the same group) or the launcher's
    ``known`` groups by digest; None when neither knows it yet."""
    if packed[0] == "list":
        return packed[1]
    if packed[0] == "range":
        return tuple(range(packed[1], packed[2], packed[3]))
    if like is not None and len(like.group_ranks) == packed[1] and \
            ranks_digest(like.group_ranks) == packed[2]:
        return like.group_ranks
    return known.get(packed[2])


class RecordCodec:
    """One rank's records as its ledger row holds them, encoded once per call site.

    Invariant: ``encode(rec)`` gives ``match_hash(rec)`` and a template that ``decode`` with
    ``like=rec`` turns back into ``rec``; the template fits ``SLOT_BYTES``."""

    MAX_SITES = 4096          # labels made per request would grow the cache without bound

    def __init__(self):
        self._sites: dict[tuple, tuple[bytes, bytes, tuple]] = {}

    def encode(self, rec: CallRecord) -> tuple[bytes, bytes]:
        """(template bytes, match hash) of ``rec``."""
        data, prefix, _ = self.site(rec)
        return data, _hash(prefix, rec.iteration)

    def site(self, rec: CallRecord) -> tuple[bytes, bytes, tuple]:
        """(template, match-key prefix, packed ranks) of ``rec``'s call site, cached."""
        key = (rec.op, rec.label, rec.callsite, rec.signature, rec.group_kind,
               rec.group_ranks, rec.root, rec.reduce_op, rec.peer, rec.tag, rec.purpose,
               rec.comm, rec.api, rec.rank, rec.local_rank, rec.instance)
        hit = self._sites.get(key)
        if hit is None:
            if len(self._sites) >= self.MAX_SITES:
                self._sites.clear()
            ranks = pack_ranks(rec.group_ranks)
            texts = {f: pack_text(f, getattr(rec, f)) for f in _TEXTS}
            template = rec._replace(seq=0, iteration=0, clock=0.0, group_ranks=(),
                                    **_BLANK_TEXTS)
            data = pickle.dumps((template, texts, ranks), protocol=pickle.HIGHEST_PROTOCOL)
            if len(data) > SLOT_BYTES:
                raise ValueError(f"a call record of {len(data)} bytes does not fit a ledger "
                                 f"slot of {SLOT_BYTES}: {rec.short()}")
            hit = self._sites[key] = (data, _match_prefix(rec), ranks)
        return hit

    @staticmethod
    def decode(data: bytes, seq: int, iteration: int, clock: float,
               like: CallRecord | None = None, known: dict | None = None) -> CallRecord | None:
        """The record of a slot; None when its group is not known yet (see ``unpack_ranks``)."""
        template, texts, ranks = pickle.loads(data)
        group = unpack_ranks(ranks, like, known or {})
        if group is None:
            return None
        fields = {f: unpack_text(v, getattr(like, f, None)) for f, v in texts.items()}
        return template._replace(seq=seq, iteration=iteration, clock=clock, group_ranks=group,
                                 **fields)


__all__ = ["RecordCodec", "match_hash", "pack_ranks", "unpack_ranks", "pack_text",
           "unpack_text", "ranks_digest", "SLOT_BYTES"]
