"""TensorRT-LLM's integer-array collectives and numpy point-to-point, on top of Distributed's
object collectives (a mixin: ``Distributed`` provides the ``tp_allgather`` etc. used here).

Shapes: ``tp_allgather_int64(values)`` -> int64 ``[tp_size, n]`` (row i from TP index i);
``cp_allgather_int64`` -> ``[cp_size, n]``; ``tp_cp_allgather_int64`` -> ``[tp*cp, n]``, rows
ordered like ``tp_cp_allgather``; ``broadcast_int64(values)`` -> the root's ``[n]``, written
into the caller's array in place when it is a contiguous int64 ndarray (as MPI's Bcast does).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np


class _ObjectCalls(Protocol):
    """Distributed's object collectives that the mixin's methods are written on."""

    def tp_allgather(self, obj: Any, *, label: str | None = None) -> list: ...
    def cp_allgather(self, obj: Any, *, label: str | None = None) -> list: ...
    def tp_cp_allgather(self, obj: Any, *, label: str | None = None) -> list: ...
    def broadcast(self, obj: Any, root: int = 0, *, label: str | None = None) -> Any: ...
    def tp_cp_broadcast(self, obj: Any, root: int = 0, *, label: str | None = None) -> Any: ...
    def isend_object(self, obj: Any, dest: int, tag: int = 0, *,
                     label: str | None = None) -> Any: ...
    def send_object(self, obj: Any, dest: int, tag: int = 0, *,
                    label: str | None = None) -> None: ...
    def recv_object(self, src: int, tag: int = 0, *, label: str | None = None) -> Any: ...


def _row(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int64).reshape(-1)


def _stack(rows: list, what: str) -> np.ndarray:
    widths = {len(r) for r in rows}
    if len(widths) > 1:
        raise RuntimeError(f"{what}: ranks sent different widths {sorted(widths)}")
    return np.stack([_row(r) for r in rows]) if rows else np.zeros((0, 0), dtype=np.int64)


class ArrayCalls:
    """The ``*_int64`` family, ``allgather_ints`` and numpy ``isend``/``send``/``recv``."""

    def tp_allgather_int64(self: _ObjectCalls, values, *, label: str | None = None) -> np.ndarray:
        return _stack(self.tp_allgather(_row(values).tolist(), label=label), "tp_allgather_int64")

    def cp_allgather_int64(self: _ObjectCalls, values, *, label: str | None = None) -> np.ndarray:
        return _stack(self.cp_allgather(_row(values).tolist(), label=label), "cp_allgather_int64")

    def tp_cp_allgather_int64(self: _ObjectCalls, values, *,
                              label: str | None = None) -> np.ndarray:
        return _stack(self.tp_cp_allgather(_row(values).tolist(), label=label),
                      "tp_cp_allgather_int64")

    def allgather_ints(self: _ObjectCalls, values, *, label: str | None = None) -> list[list[int]]:
        """One plain int list per TP rank (every rank must send the same width)."""
        return _stack(self.tp_allgather([int(v) for v in values], label=label),
                      "allgather_ints").tolist()

    def broadcast_int64(self: _ObjectCalls, values, root: int = 0, *, prefer_cpu: bool = False,
                        label: str | None = None) -> np.ndarray:
        got = _row(self.broadcast(_row(values).tolist(), root, label=label))
        return _in_place(values, got)

    def tp_cp_broadcast_int64(self: _ObjectCalls, values, root: int = 0, *,
                              label: str | None = None) -> np.ndarray:
        got = _row(self.tp_cp_broadcast(_row(values).tolist(), root, label=label))
        return _in_place(values, got)

    # -- numpy point to point (MPIDist's buffer sends) -----------------------------------
    def isend(self: _ObjectCalls, buf, dest, tag: int = 0, *, label: str | None = None):
        """Send a copy of the numpy array ``buf``; the handle's ``wait()`` blocks until taken."""
        return self.isend_object(np.array(buf, copy=True), dest, tag, label=label)

    def send(self: _ObjectCalls, buf, dest, tag: int = 0, *, label: str | None = None) -> None:
        self.send_object(np.array(buf, copy=True), dest, tag, label=label)

    def recv(self: _ObjectCalls, buf, src, tag: int = 0, *, label: str | None = None):
        """Receive into the numpy array ``buf`` (filled in place, as MPI does) and return it."""
        got = self.recv_object(src, tag, label=label)
        if isinstance(buf, np.ndarray) and buf.shape == np.shape(got):
            buf[...] = got
            return buf
        return got


def _in_place(values, got: np.ndarray) -> np.ndarray:
    if isinstance(values, np.ndarray) and values.dtype == np.int64 and values.flags.c_contiguous \
            and values.size == got.size:
        values.reshape(-1)[:] = got
        return values
    return got
