"""mpi4py's buffer specifications, parsed; typed bytes read from and written into them (pure).

A buffer is anything with the buffer protocol: a numpy array, ``bytes``, ``bytearray``, a
``memoryview`` (a slice of one too: TensorRT-LLM broadcasts ``[memoryview(blob)[a:b],
MPI.BYTE]``). It is seen as flat bytes, so a spec is told from a buffer by being a list or a
tuple -- never by ``np.isscalar``, which calls a memoryview a scalar. The forms are mpi4py's:

- simple: ``buf``, ``[buf, type]``, ``[buf, count]``, ``[buf, count, type]``,
  ``[buf, (count, displ), type]``, ``[buf, count, displ, type]``; in the block collectives
  (Allgather's receive buffer, Scatter's send buffer, ...) the count is per rank and defaults
  to the buffer's elements divided by the ranks;
- vector: ``buf``, ``[buf, counts]``, ``[buf, (counts, displs)]``, ``[buf, type]``,
  ``[buf, counts, type]``, ``[buf, (counts, displs), type]``, ``[buf, counts, displs, type]``;
  a single count is every rank's, displacements default to the running sum of the counts.

Counts and displacements are in elements of the type; a type not given is the buffer's own
(its format). Writing more bytes than a region holds is ``MPI_ERR_TRUNCATE``, as in MPI.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from .datatypes import ERR_TRUNCATE, Datatype, Exception as MPIException, \
    datatype_of, datatype_of_format, is_typespec


def byte_view(buf, what: str, writable: bool) -> memoryview:
    """``buf`` as one flat run of bytes; TypeError when it is no buffer."""
    try:
        view = memoryview(buf)
    except TypeError:
        raise TypeError(f"MPI {what}: {type(buf).__name__} is not a buffer (a numpy array, "
                        "bytes, bytearray or memoryview)") from None
    if writable and view.readonly:
        raise BufferError(f"MPI {what}: the receive buffer is read-only")
    if not view.c_contiguous:
        raise BufferError(f"MPI {what}: the buffer is not contiguous")
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


@dataclass(frozen=True)
class Span:
    """``count`` elements of ``datatype`` from element ``displ`` of a buffer's bytes."""

    view: memoryview
    datatype: Datatype
    count: int
    displ: int = 0

    @property
    def nbytes(self) -> int:
        return self.count * self.datatype.size

    @property
    def start(self) -> int:
        return self.displ * self.datatype.size

    def data(self) -> bytes:
        return bytes(self.view[self.start:self.start + self.nbytes])

    def array(self) -> np.ndarray:
        """The elements, as an array of their own (a copy)."""
        return np.frombuffer(self.data(), dtype=self.datatype.dtype).copy()

    def block(self, i: int) -> "Span":
        """Block ``i`` of a block spec (ranks' blocks lie back to back)."""
        return Span(self.view, self.datatype, self.count, self.displ + i * self.count)

    def write(self, data: bytes, what: str) -> None:
        """Put ``data`` at the region's start; a message longer than the region truncates."""
        if len(data) > self.nbytes:
            raise MPIException(ERR_TRUNCATE, f"MPI {what}: {len(data)} bytes arrived for a "
                                             f"receive of {self.count} x {self.datatype.name}")
        self.view[self.start:self.start + len(data)] = data


@dataclass(frozen=True)
class VSpan:
    """A vector spec: rank i's part is ``counts[i]`` elements from element ``displs[i]``."""

    view: memoryview
    datatype: Datatype
    counts: tuple[int, ...]
    displs: tuple[int, ...]

    def part(self, i: int) -> Span:
        return Span(self.view, self.datatype, self.counts[i], self.displs[i])


def _split(spec, what: str):
    """(buffer, [count-ish items], datatype or None) of a spec."""
    if not isinstance(spec, (list, tuple)):
        return spec, [], None
    if not 1 <= len(spec) <= 4:
        raise TypeError(f"MPI {what}: a buffer spec has 1 to 4 items ([buf, count, displ, "
                        f"type]), not {len(spec)}")
    buf, rest = spec[0], list(spec[1:])
    dtype = datatype_of(rest.pop(), what) if rest and is_typespec(rest[-1]) else None
    return buf, rest, dtype


def _int(x, what: str, field: str) -> int:
    if not isinstance(x, numbers.Integral) or isinstance(x, bool) or int(x) < 0:
        raise ValueError(f"MPI {what}: {field} {x!r} is not a count (an integer >= 0)")
    return int(x)


def _elements(view: memoryview, dtype: Datatype) -> int:
    return view.nbytes // dtype.size


def _fits(span_end: int, view: memoryview, dtype: Datatype, what: str) -> None:
    if span_end * dtype.size > view.nbytes:
        raise ValueError(f"MPI {what}: the spec reaches element {span_end} of "
                         f"{dtype.name}, past the buffer's {view.nbytes} bytes")


def simple(spec, what: str, writable: bool, blocks: int = 1) -> Span:
    """A simple or block spec; ``blocks`` ranks' blocks when the count is per rank."""
    buf, rest, dtype = _split(spec, what)
    view = byte_view(buf, what, writable)
    if dtype is None:
        dtype = datatype_of_format(memoryview(buf).format, what)
    count, displ = None, 0
    if len(rest) == 2:
        count, displ = rest
    elif len(rest) == 1:
        count = rest[0]
        if isinstance(count, (list, tuple)):
            if len(count) != 2:
                raise TypeError(f"MPI {what}: (count, displ) must have two items, not {count!r}")
            count, displ = count
    if len(rest) > 2:
        raise TypeError(f"MPI {what}: {spec!r} is not a buffer spec")
    count = _elements(view, dtype) // blocks if count is None else _int(count, what, "count")
    displ = _int(displ, what, "displacement")
    _fits(displ + count * blocks, view, dtype, what)
    return Span(view, dtype, count, displ)


def _is_pair(x) -> bool:
    """``(counts, displs)``: a 2-tuple of sequences (a 2-rank counts tuple holds integers)."""
    return isinstance(x, tuple) and len(x) == 2 and not any(
        isinstance(v, numbers.Integral) for v in x)


def _per_rank(x, size: int, what: str, field: str) -> tuple[int, ...]:
    if isinstance(x, numbers.Integral):
        return (_int(x, what, field),) * size
    values = tuple(_int(v, what, field) for v in x)
    if len(values) != size:
        raise ValueError(f"MPI {what}: {len(values)} {field}s for {size} ranks")
    return values


def vector(spec, what: str, writable: bool, size: int) -> VSpan:
    """A vector spec over ``size`` ranks."""
    buf, rest, dtype = _split(spec, what)
    view = byte_view(buf, what, writable)
    if dtype is None:
        dtype = datatype_of_format(memoryview(buf).format, what)
    counts = displs = None
    if len(rest) == 2:
        counts, displs = rest
    elif len(rest) == 1:
        counts, displs = rest[0] if _is_pair(rest[0]) else (rest[0], None)
    if counts is None:
        counts = _elements(view, dtype) // size
    counts = _per_rank(counts, size, what, "count")
    if displs is None:
        displs = tuple(int(x) for x in np.concatenate([[0], np.cumsum(counts[:-1])]))[:size]
    else:
        displs = _per_rank(displs, size, what, "displacement")
    _fits(max((d + c for c, d in zip(counts, displs)), default=0), view, dtype, what)
    return VSpan(view, dtype, counts, displs)
