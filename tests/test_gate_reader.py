"""The generated operand reader (comm.gate_reader) gives each operand's value and key as
gate_values' rule does, one operand at a time; and a launch with gates off puts nothing on a
call's path (the observer is a transport wrapper a launch with gates installs)."""

from __future__ import annotations

import ast
import types

from hypothesis import given, strategies as st

import trtsim
from trtsim.comm.gate_reader import reader_of
from trtsim.comm.gate_transport import GatedTransport
from trtsim.comm.gate_values import PLAIN, UNREADABLE, eq_pairs, key_of, meanings
from trtsim.gates.model import function_gates
from trtsim.gates.source import SourceText

SOURCE = """\
def f():
    if n > 0 and box.size == limit and len(items) and cfg["k"] is not None and \\
            isinstance(obj, int) and missing:
        pass
"""


def _gate():
    tree = ast.parse(SOURCE)
    return function_gates(tree.body[0].body, "g.py", SourceText(SOURCE))[0]


def _expected(gate, glob, local):
    ops = gate.operands
    values = []
    for op in ops:
        try:
            values.append(eval(op.code, glob, local))
        except Exception:                               # noqa: BLE001
            values.append(UNREADABLE)
    keys = [v if type(v) in PLAIN else key_of(v, m) for v, m in zip(values, meanings(gate))]
    for i, j in eq_pairs(gate, ops):
        if values[j] is None:
            keys[i] = values[i] is None
    return tuple(values), tuple(keys)


scalars = st.one_of(st.none(), st.integers(-3, 3), st.booleans(), st.text(max_size=2),
                    st.lists(st.integers(), max_size=2))


@given(n=scalars, size=scalars, limit=scalars, items=st.lists(st.integers(), max_size=3),
       k=scalars, obj=scalars)
def test_reader_gives_what_each_operand_read_alone_gives(n, size, limit, items, k, obj):
    gate = _gate()
    local = {"n": n, "box": types.SimpleNamespace(size=size), "limit": limit,
             "items": items, "obj": obj}
    glob = {"cfg": {"k": k}}
    read = reader_of(gate.operands, meanings(gate), eq_pairs(gate, gate.operands))
    values, key = read(glob, local)
    want_values, want_key = _expected(gate, glob, local)
    assert [type(v) for v in values] == [type(v) for v in want_values]
    assert key == want_key
    assert any(v is UNREADABLE for v in values)         # `missing` is bound nowhere


def _prog(dist):
    dist.tp_allgather(dist.rank)
    return type(dist._transport).__name__


def test_gates_off_leaves_the_transport_alone_and_observe_wraps_it():
    off = trtsim.launch(_prog, tp=2)
    assert off == [off[0]] * 2 and off[0] != GatedTransport.__name__
    assert trtsim.launch(_prog, tp=2, gates="observe") == [GatedTransport.__name__] * 2
