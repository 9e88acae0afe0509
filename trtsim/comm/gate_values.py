"""What a gate's operands are worth, compared with the meaning of the test.

A numeric test can flip at any value, so numbers (and strings, enums, one-element tensors)
compare by value; an operand tested with ``is None``/``is not None`` by None-ness; the first
argument of ``isinstance`` by type; any other object by truthiness -- read only from builtin
containers and objects that define no ``__bool__``/``__len__`` (no user code runs to compare:
an object whose truthiness is its own code compares as equal to any other).
"""

from __future__ import annotations

import ast
import enum
import functools
import itertools
import numbers
import types

NONE_TEST, TYPE_TEST, VALUE_TEST = "none", "type", "value"
_CONTAINERS = (list, tuple, dict, set, frozenset, range, str, bytes)
_TEXT = 40                                  # characters of a value's text


class Unreadable:
    """An operand that could not be read in the frame (a name bound later, an exception).
    Every one equals every other (a copy that crossed processes too)."""

    def __repr__(self) -> str:
        return "<unreadable>"

    def __eq__(self, other) -> bool:
        return isinstance(other, Unreadable)

    def __hash__(self) -> int:
        return 0


UNREADABLE = Unreadable()


@functools.lru_cache(maxsize=4096)
def _meanings(test: ast.expr) -> dict[str, str]:
    """Operand text -> NONE_TEST or TYPE_TEST, from the test's shape (others: VALUE_TEST)."""
    out: dict[str, str] = {}
    for node in ast.walk(test):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            for op, (a, b) in zip(node.ops, itertools.pairwise(sides)):
                if isinstance(op, (ast.Is, ast.IsNot)):
                    for x, y in ((a, b), (b, a)):
                        if isinstance(y, ast.Constant) and y.value is None:
                            out[ast.unparse(x)] = NONE_TEST
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("isinstance", "type") and node.args:
            out[ast.unparse(node.args[0])] = TYPE_TEST
    return out


def eq_pairs(gate, operands) -> tuple[tuple[int, int], ...]:
    """Indices (in ``operands``) of the two sides of each ``==``/``!=`` test between
    operands: a side that is None there can never equal a number, so the other side then
    counts by None-ness (``rank == wrong_rank`` with ``wrong_rank=None`` never flips)."""
    if gate.test is None:
        return ()
    index = {ast.unparse(op.expr): i for i, op in enumerate(operands)}
    out = []
    for node in ast.walk(gate.test):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            for op, (a, b) in zip(node.ops, itertools.pairwise(sides)):
                ia, ib = index.get(ast.unparse(a)), index.get(ast.unparse(b))
                if isinstance(op, (ast.Eq, ast.NotEq)) and ia is not None and ib is not None:
                    out += [(ia, ib), (ib, ia)]
    return tuple(out)


_SAFE = (ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.Compare, ast.UnaryOp,
         ast.BoolOp, ast.BinOp, ast.Load, ast.cmpop, ast.unaryop, ast.boolop, ast.operator)


def _safe(node: ast.expr) -> bool:
    """An expression that reads and compares values and calls nothing but ``len``."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            if not (isinstance(sub.func, ast.Name) and sub.func.id == "len"):
                return False
        elif not isinstance(sub, _SAFE + (ast.expr_context,)):
            return False
    return True


def bool_parts(gate, operands) -> tuple | None:
    """For a test that is an ``or``/``and`` of parts: ("or" | "and", ((code or None, operand
    indices), ...)); None for any other test. A part true (``or``) or false (``and``) on
    every member, with equal operands, decides the test alone: the other parts' operands
    then decide nothing (``mine or not idle_skips`` with ``idle_skips=False``)."""
    test = gate.test
    if not isinstance(test, ast.BoolOp):
        return None
    out = []
    for value in test.values:
        span = ((value.lineno, value.col_offset), (value.end_lineno, value.end_col_offset))
        inside = tuple(i for i, op in enumerate(operands)
                       if span[0] <= (op.expr.lineno, op.expr.col_offset) < span[1])
        code = compile(ast.Expression(body=value), "<gate part>", "eval") if _safe(value) \
            else None
        out.append((code, inside))
    return ("or" if isinstance(test.op, ast.Or) else "and", tuple(out))


def truth_of(value) -> bool | None:
    """A value's truthiness where reading it runs no user code; else None."""
    if type(value) in _PLAIN or isinstance(value, _CONTAINERS):
        return bool(value)
    return None


def meanings(gate) -> tuple[str, ...]:
    """For each of the gate's operands, how it compares."""
    if gate.test is None:
        return tuple(VALUE_TEST for _ in gate.operands)
    found = _meanings(gate.test)
    return tuple(found.get(ast.unparse(op.expr), VALUE_TEST) for op in gate.operands)


def _scalar(value):
    """A tensor of one element as its number (torch's ``item``: no user code); else None."""
    numel = getattr(type(value), "numel", None)
    if numel is None or type(value).__module__.split(".")[0] != "torch":
        return None
    try:
        return value.item() if value.numel() == 1 else None
    except (RuntimeError, TypeError, ValueError):
        return None


PLAIN = frozenset({int, float, bool, str, bytes, type(None)})   # compared as they are
_PLAIN = PLAIN
_CALLABLE = frozenset({type, types.BuiltinFunctionType, types.FunctionType, types.MethodType,
                       types.BuiltinMethodType, types.ModuleType})


def key_of(value, meaning: str):
    """What members must share for the operand to count as equal."""
    kind = type(value)
    if meaning == VALUE_TEST:                               # the common cases, first
        if kind in _PLAIN:
            return value
        if kind in _CALLABLE:
            return ("truth", True)
    if value is UNREADABLE:
        return UNREADABLE
    if meaning == NONE_TEST:
        return value is None
    if meaning == TYPE_TEST:
        return type(value).__qualname__
    if value is None or isinstance(value, (bool, numbers.Number, str, bytes, enum.Enum)):
        return value
    item = _scalar(value)
    if item is not None:
        return item
    if isinstance(value, _CONTAINERS):
        return ("truth", len(value) > 0)
    cls = type(value)
    if getattr(cls, "__bool__", None) is None and getattr(cls, "__len__", None) is None:
        return ("truth", True)
    return ("opaque",)                          # its truthiness is user code: not read


def text_of(value) -> str:
    """A short text of a value as LatentGate.values shows it."""
    if value is None or isinstance(value, (bool, numbers.Number, enum.Enum, str, bytes)):
        text = repr(value)
    elif isinstance(value, _CONTAINERS):
        text = f"<{type(value).__name__} of {len(value)}>"
    else:
        item = _scalar(value)
        text = repr(item) if item is not None else f"<{type(value).__name__}>"
    return text if len(text) <= _TEXT else text[:_TEXT - 3] + "..."
