"""mpi4py's buffer specs, parsed by the stand-in (trtsim/intercept/mpi/buffers.py): every
form over every kind of buffer names the bytes an independent model of the spec names."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trtsim.intercept.mpi import buffers
from trtsim.intercept.mpi.datatypes import DATATYPES, ERR_TRUNCATE, Exception as MPIError

TYPES = ["BYTE", "CHAR", "INT", "INT32_T", "INT64_T", "LONG", "FLOAT", "DOUBLE", "BOOL",
         "UINT8_T", "UINT16_T", "SHORT"]
KINDS = ["ndarray", "bytes", "bytearray", "memoryview", "memoryview slice"]


def make(kind: str, data: bytes):
    """``data`` as the buffer kind; a slice is a view into a larger buffer (TensorRT-LLM's
    ``memoryview(blob)[a:b]``)."""
    if kind == "ndarray":
        return np.frombuffer(bytearray(data), dtype=np.uint8)
    if kind == "bytes":
        return bytes(data)
    if kind == "bytearray":
        return bytearray(data)
    if kind == "memoryview":
        return memoryview(bytearray(data))
    return memoryview(bytearray(b"#" + data + b"#"))[1:-1]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(TYPES), st.sampled_from(KINDS), st.integers(0, 12), st.data())
def test_a_simple_spec_names_count_elements_from_displ(type_name, kind, n, data):
    dtype = DATATYPES[type_name]
    raw = bytes(range(256)) * 2
    blob = raw[:n * dtype.size]
    count = data.draw(st.integers(0, n))
    displ = data.draw(st.integers(0, n - count))
    form = data.draw(st.sampled_from(["[buf, type]", "[buf, count, type]",
                                      "[buf, (count, displ), type]", "[buf, count, displ, type]"]))
    buf = make(kind, blob)
    spec = {"[buf, type]": [buf, dtype], "[buf, count, type]": [buf, count, dtype],
            "[buf, (count, displ), type]": (buf, (count, displ), dtype),
            "[buf, count, displ, type]": [buf, count, displ, dtype]}[form]
    want_count, want_displ = (n, 0) if form == "[buf, type]" else \
        (count, displ if "displ" in form else 0)
    span = buffers.simple(spec, "test", writable=False)
    assert span.datatype is dtype and (span.count, span.displ) == (want_count, want_displ)
    start = want_displ * dtype.size
    assert span.data() == blob[start:start + want_count * dtype.size]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=5), st.sampled_from(TYPES),
       st.booleans(), st.sampled_from(["counts", "(counts, displs)", "counts, displs"]))
def test_a_vector_spec_places_each_rank_at_its_displacement(counts, type_name, given_displs,
                                                            form):
    dtype = DATATYPES[type_name]
    size = len(counts)
    displs = list(np.cumsum([0] + counts[:-1]))
    if given_displs:                               # gaps between the parts, in reverse order
        displs = [sum(c + 1 for c in counts[i + 1:]) for i in range(size)]
    total = max((d + c for c, d in zip(counts, displs)), default=0)
    buf = np.zeros(total * dtype.size, dtype=np.uint8)
    if form == "counts" or not given_displs:
        spec, displs = [buf, counts, dtype], list(np.cumsum([0] + counts[:-1]))
    elif form == "(counts, displs)":
        spec = [buf, (counts, displs), dtype]
    else:
        spec = [buf, counts, displs, dtype]
    v = buffers.vector(spec, "test", True, size)
    assert v.counts == tuple(counts) and v.displs == tuple(int(d) for d in displs)
    for i in range(size):
        part = v.part(i)
        part.write(bytes([i + 1]) * part.nbytes, "test")
    for i in range(size):
        lo = int(v.displs[i]) * dtype.size
        n = counts[i] * dtype.size
        assert bytes(buf[lo:lo + n]) == bytes([i + 1]) * n


def test_a_memoryview_in_a_list_is_a_buffer_not_a_scalar():
    """np.isscalar(memoryview(...)) is True: a spec is told by being a list, never by that."""
    assert np.isscalar(memoryview(b"ab"))
    span = buffers.simple([memoryview(b"abcdef")[2:5], DATATYPES["BYTE"]], "Bcast", False)
    assert span.data() == b"cde" and span.count == 3


def test_an_untyped_buffer_takes_its_format_and_block_counts_divide_it():
    span = buffers.simple(np.arange(6, dtype=np.int64), "Allgather", True, blocks=3)
    assert span.datatype is DATATYPES["LONG"] and span.count == 2
    assert span.block(2).data() == np.arange(4, 6, dtype=np.int64).tobytes()
    typed = buffers.simple([np.zeros(4, np.int32), "i4"], "x", False)
    assert typed.datatype is DATATYPES["INT32_T"]
    v = buffers.vector(np.zeros(8, np.float64), "Allgatherv", True, 4)
    assert v.counts == (2,) * 4 and v.displs == (0, 2, 4, 6)
    assert buffers.vector([np.zeros(6, np.int8), 3], "x", True, 2).displs == (0, 3)


def test_bad_specs_are_refused_with_the_call_named():
    with pytest.raises(BufferError, match="MPI Recv: the receive buffer is read-only"):
        buffers.simple(b"abc", "Recv", writable=True)
    with pytest.raises(TypeError, match="MPI Bcast: list is not a buffer"):
        buffers.simple([[1, 2], DATATYPES["INT"]], "Bcast", False)
    with pytest.raises(ValueError, match="past the buffer's 8 bytes"):
        buffers.simple([bytearray(8), 3, DATATYPES["INT"]], "Send", False)
    with pytest.raises(ValueError, match="3 counts for 4 ranks"):
        buffers.vector([bytearray(8), [1, 1, 1], DATATYPES["BYTE"]], "Gatherv", True, 4)
    with pytest.raises(TypeError, match="not an MPI datatype"):
        buffers.simple([bytearray(8), "no-such-type"], "Bcast", False)
    span = buffers.simple([bytearray(4), 2, DATATYPES["BYTE"]], "Recv", True)
    with pytest.raises(MPIError) as info:
        span.write(b"xyz", "Recv")
    assert info.value.Get_error_class() == ERR_TRUNCATE
    assert "MPI_ERR_TRUNCATE: message truncated" in str(info.value)
