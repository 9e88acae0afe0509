"""The stand-in's value types of ``mpi4py.MPI``: datatypes, reduce ops, sentinels, the error.

A ``Datatype`` is a named element type with a size and the numpy dtype its bytes read as
(Open MPI's sizes on x86-64 Linux, as mpi4py 4.1.2 reports them: ``MPI.LONG`` is 8 bytes,
``MPI.BOOL`` is ``MPI_C_BOOL``). Buffer specs may name a type by its object, its typecode
(``"i8"``, ``"d"``) or leave it to the buffer's format (``memoryview(buf).format``), as mpi4py
does. Errors MPI reports as error classes (a truncated message) are ``MPI.Exception``.
"""

from __future__ import annotations

import operator

import numpy as np

from ...calls.reduce_op import op_name
from .names import MPIObject

# attribute name -> (MPI name, numpy dtype, typecode as mpi4py's Datatype.tocode() gives it)
_TABLE = {
    "BYTE": ("MPI_BYTE", "u1", "B"), "PACKED": ("MPI_PACKED", "u1", "B"),
    "CHAR": ("MPI_CHAR", "i1", "c"), "SIGNED_CHAR": ("MPI_SIGNED_CHAR", "i1", "b"),
    "UNSIGNED_CHAR": ("MPI_UNSIGNED_CHAR", "u1", "B"), "WCHAR": ("MPI_WCHAR", "i4", "U"),
    "SHORT": ("MPI_SHORT", "i2", "h"), "UNSIGNED_SHORT": ("MPI_UNSIGNED_SHORT", "u2", "H"),
    "INT": ("MPI_INT", "i4", "i"), "UNSIGNED": ("MPI_UNSIGNED", "u4", "I"),
    "LONG": ("MPI_LONG", "i8", "l"), "UNSIGNED_LONG": ("MPI_UNSIGNED_LONG", "u8", "L"),
    "LONG_LONG": ("MPI_LONG_LONG_INT", "i8", "q"),
    "UNSIGNED_LONG_LONG": ("MPI_UNSIGNED_LONG_LONG", "u8", "Q"),
    "INT8_T": ("MPI_INT8_T", "i1", "i1"), "INT16_T": ("MPI_INT16_T", "i2", "i2"),
    "INT32_T": ("MPI_INT32_T", "i4", "i4"), "INT64_T": ("MPI_INT64_T", "i8", "i8"),
    "UINT8_T": ("MPI_UINT8_T", "u1", "u1"), "UINT16_T": ("MPI_UINT16_T", "u2", "u2"),
    "UINT32_T": ("MPI_UINT32_T", "u4", "u4"), "UINT64_T": ("MPI_UINT64_T", "u8", "u8"),
    "FLOAT": ("MPI_FLOAT", "f4", "f"), "DOUBLE": ("MPI_DOUBLE", "f8", "d"),
    "LONG_DOUBLE": ("MPI_LONG_DOUBLE", "f16", "g"),
    "C_BOOL": ("MPI_C_BOOL", "?", "b1"), "CXX_BOOL": ("MPI_CXX_BOOL", "?", "?"),
    "C_FLOAT_COMPLEX": ("MPI_C_COMPLEX", "c8", "F"),
    "C_DOUBLE_COMPLEX": ("MPI_C_DOUBLE_COMPLEX", "c16", "D"),
    "AINT": ("MPI_AINT", "i8", "p"), "OFFSET": ("MPI_OFFSET", "i8", "p"),
    "COUNT": ("MPI_COUNT", "i8", "p"),
}
# mpi4py's second names for the same types
_ALIASES = {"BOOL": "C_BOOL", "COMPLEX": "C_FLOAT_COMPLEX", "DOUBLE_COMPLEX": "C_DOUBLE_COMPLEX",
            "C_COMPLEX": "C_FLOAT_COMPLEX", "SIGNED_SHORT": "SHORT", "SIGNED_INT": "INT",
            "SIGNED_LONG": "LONG", "SIGNED_LONG_LONG": "LONG_LONG",
            "UNSIGNED_INT": "UNSIGNED", "LONG_LONG_INT": "LONG_LONG"}
# buffer format character (struct/numpy) -> the type mpi4py picks for an untyped buffer
_BY_FORMAT = {"c": "CHAR", "b": "SIGNED_CHAR", "B": "BYTE", "h": "SHORT", "H": "UNSIGNED_SHORT",
              "i": "INT", "I": "UNSIGNED", "l": "LONG", "L": "UNSIGNED_LONG", "q": "LONG_LONG",
              "Q": "UNSIGNED_LONG_LONG", "f": "FLOAT", "d": "DOUBLE", "g": "LONG_DOUBLE",
              "?": "C_BOOL", "Zf": "C_FLOAT_COMPLEX", "Zd": "C_DOUBLE_COMPLEX"}


class _Predefined(MPIObject):
    """A predefined MPI object (a datatype, an op): pickled and shown by its attribute name;
    the names of mpi4py's class the stand-in lacks refuse (``names``)."""

    def _key(self) -> str:
        raise NotImplementedError

    def __reduce__(self):
        return predefined, (self._mpi_names, self._key())

    def __repr__(self) -> str:
        return f"MPI.{self._key()}"


class Datatype(_Predefined):
    """A predefined MPI datatype (``MPI.INT64_T``): its name, size and numpy dtype."""

    _mpi_names = "Datatype"

    def __init__(self, attr: str, name: str, dtype: str, code: str):
        self.attr, self._name, self.code = attr, name, code
        self.dtype = np.dtype(dtype) if dtype != "f16" else np.dtype(np.longdouble)

    def Get_name(self) -> str:
        return self._name

    name = property(Get_name)

    def Get_size(self) -> int:
        return self.dtype.itemsize

    def Get_extent(self) -> tuple[int, int]:
        return 0, self.dtype.itemsize

    size = extent = ub = property(Get_size)
    lb = 0
    is_predefined = is_named = True

    def tocode(self) -> str:
        return self.code

    typestr = property(lambda self: self.dtype.str)
    typechar = property(lambda self: self.dtype.char)

    def Commit(self) -> "Datatype":
        return self

    def Free(self) -> None:
        pass

    def _key(self) -> str:
        return self.attr


DATATYPES = {attr: Datatype(attr, *row) for attr, row in _TABLE.items()}
DATATYPES.update({alias: DATATYPES[attr] for alias, attr in _ALIASES.items()})
_BY_CODE = {d.code: d for d in DATATYPES.values()}


def datatype_of(spec, what: str) -> Datatype:
    """The Datatype a buffer spec names: the object, or a typecode string (``"i8"``)."""
    if isinstance(spec, Datatype):
        return spec
    if isinstance(spec, str):
        found = _BY_CODE.get(spec) or DATATYPES.get(_BY_FORMAT.get(spec, ""))
        if found is None:
            try:
                dtype = np.dtype(spec)
            except TypeError:
                dtype = None                 # (np.dtype(None) is float64: no comparing it)
            found = next((d for d in DATATYPES.values() if dtype is not None
                          and d.dtype == dtype), None)
        if found is not None:
            return found
    raise TypeError(f"MPI {what}: {spec!r} is not an MPI datatype (MPI.INT64_T, MPI.BYTE, ...)")


def datatype_of_format(fmt: str, what: str) -> Datatype:
    """The type mpi4py gives a buffer passed without one, from its format (``"l"``, ``"<q"``)."""
    key = fmt.lstrip("@=<>!|")
    attr = _BY_FORMAT.get(key)
    if attr is None:
        raise TypeError(f"MPI {what}: the buffer's format {fmt!r} maps to no MPI datatype; "
                        "name one ([buf, MPI.BYTE])")
    return DATATYPES[attr]


def is_typespec(x) -> bool:
    return isinstance(x, (Datatype, str))


class Op(_Predefined):
    """A reduce op (``MPI.SUM``): its name decides, and it reduces two values when called.
    ``reducible``: trtsim's collectives compute it (the logical and location ops are not)."""

    _mpi_names = "Op"

    def __init__(self, name: str, fn, reducible: bool = True):
        self.name, self._fn, self.reducible = name, fn, reducible

    def __call__(self, a, b):
        return self._fn(a, b)

    def Is_commutative(self) -> bool:
        return True

    is_commutative = property(Is_commutative)
    is_predefined = True

    def _key(self) -> str:
        return self.name


OPS = {name: Op(name, fn) for name, fn in (
    ("SUM", operator.add), ("PROD", operator.mul), ("MAX", max), ("MIN", min),
    ("BAND", operator.and_), ("BOR", operator.or_), ("BXOR", operator.xor))}
OPS.update({name: Op(name, fn, reducible=False) for name, fn in (
    ("LAND", lambda a, b: a and b), ("LOR", lambda a, b: a or b),
    ("LXOR", lambda a, b: bool(a) != bool(b)), ("MAXLOC", max), ("MINLOC", min),
    ("REPLACE", lambda a, b: b), ("NO_OP", lambda a, b: a))})


def predefined(owner: str, key: str) -> _Predefined:
    """The predefined datatype or op of that name (what their pickles hold)."""
    return (DATATYPES if owner == "Datatype" else OPS)[key]


def reduce_name(op, what: str) -> str:
    """trtsim's name of a reduce op (``sum``, ...); the ops trtsim does not compute say so."""
    if isinstance(op, Op) and not op.reducible:
        raise NotImplementedError(f"MPI {what} with MPI.{op.name} is not covered by trtsim's "
                                  "MPI stand-in (SUM, PROD, MAX, MIN, BAND, BOR, BXOR are)")
    return "sum" if op is None else op_name(op)


def real_op(op) -> Op:
    """The op a call means when it names none (mpi4py's default: SUM)."""
    return op if op is not None else OPS["SUM"]


class _Sentinel:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self):
        return sentinel, (self.name,)


IN_PLACE, BOTTOM = _Sentinel("IN_PLACE"), _Sentinel("BOTTOM")


def sentinel(name: str) -> _Sentinel:
    return {"IN_PLACE": IN_PLACE, "BOTTOM": BOTTOM}[name]


# Open MPI's error classes (mpi.h of Open MPI 5) that the stand-in raises.
ERR_BUFFER, ERR_COUNT, ERR_TYPE, ERR_COMM, ERR_TRUNCATE, ERR_OTHER = 1, 2, 3, 5, 15, 16
_ERROR_TEXT = {ERR_BUFFER: "MPI_ERR_BUFFER: invalid buffer pointer",
               ERR_COUNT: "MPI_ERR_COUNT: invalid count argument",
               ERR_TYPE: "MPI_ERR_TYPE: invalid datatype",
               ERR_COMM: "MPI_ERR_COMM: invalid communicator",
               ERR_TRUNCATE: "MPI_ERR_TRUNCATE: message truncated",
               ERR_OTHER: "MPI_ERR_OTHER: known error not in list"}


class Exception(RuntimeError, MPIObject):  # noqa: A001 - mpi4py's name: MPI.Exception
    """An MPI error class raised as mpi4py raises it (``MPI.Exception``), with trtsim's detail."""

    _mpi_names = "Exception"

    def __init__(self, error_class: int, detail: str = ""):
        self._error_class, self.detail = error_class, detail
        text = _ERROR_TEXT.get(error_class, f"MPI error {error_class}")
        super().__init__(f"{text} ({detail})" if detail else text)

    def Get_error_class(self) -> int:
        return self._error_class

    Get_error_code = Get_error_class

    def Get_error_string(self) -> str:
        return _ERROR_TEXT.get(self.error_class, "")

    error_class = error_code = property(Get_error_class)
    error_string = property(Get_error_string)

    def __reduce__(self):
        return type(self), (self.error_class, self.detail)
