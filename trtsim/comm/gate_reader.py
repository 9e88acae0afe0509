"""One function per gate that reads its operands in a frame and gives (values, key): made once
per gate and instruction (``gate_watch._entry``), called once per gate per guarded call.

It is generated source, compiled once: per call, one Python call reads every operand -- a
plain name by dict lookups (locals, globals, builtins), anything else (attributes, constant
subscripts, ``len``) by its compiled code -- and computes the comparison key inline, with no
list, ``zip`` or reader call per operand (observe's cost is per call: issue 36 item 8). The
key is ``gate_values``' rule: a plain value (number, string, None) as it is, anything else
``key_of`` with the operand's meaning; the side of an ``==``/``!=`` test whose other side is
None counts by None-ness (``eq_pairs``).
"""

from __future__ import annotations

import builtins
import keyword
from collections.abc import Callable

from .gate_values import PLAIN, UNREADABLE, key_of

Reader = Callable[[dict, dict], tuple[tuple, tuple]]


def reader_of(operands: tuple, means: tuple, pairs: tuple) -> Reader:
    """The function ``(globals, locals) -> (values, key)`` of one gate's ``operands`` (in
    source order, each with its meaning in ``means``; ``pairs``: ``eq_pairs``' indices)."""
    space: dict = {"B": vars(builtins), "U": UNREADABLE, "P": PLAIN, "K": key_of, "E": eval,
                   "X": Exception}
    lines = ["def read(g, l):"]
    for i, (op, mean) in enumerate(zip(operands, means)):
        space[f"M{i}"] = mean
        name = op.text
        if op.kind == "name" and name.isidentifier() and not keyword.iskeyword(name):
            lines += [f"    if {name!r} in l: v{i} = l[{name!r}]",
                      f"    elif {name!r} in g: v{i} = g[{name!r}]",
                      f"    else: v{i} = B.get({name!r}, U)"]
        else:
            space[f"C{i}"] = op.code
            lines += ["    try:", f"        v{i} = E(C{i}, g, l)",
                      "    except X:", f"        v{i} = U"]        # unbound, raising
        lines.append(f"    k{i} = v{i} if type(v{i}) in P else K(v{i}, M{i})")
    for i, j in pairs:
        lines.append(f"    if v{j} is None: k{i} = v{i} is None")
    values = "".join(f"v{i}, " for i in range(len(operands)))
    keys = "".join(f"k{i}, " for i in range(len(operands)))
    lines.append(f"    return ({values}), ({keys})")
    exec(compile("\n".join(lines), "<trtsim gate reader>", "exec"), space)  # noqa: S102
    return space["read"]
