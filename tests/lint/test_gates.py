"""The gate model (trtsim.gates): each form of gate, its regions and operands, the
suppression comment, and the per-code-object answers a run-time observer asks for."""

import ast
import textwrap

import pytest

from trtsim.gates import (Suppression, enclosing, function_gates, gates_at, gates_for,
                          parse_suppression, suppressions_in)
from trtsim.gates.source import SourceText

SOURCE = textwrap.dedent('''\
    def step(batch, comm, rank):
        if not batch.requests:  # trtsim: uniform(tp, pp) -- same requests on the group
            return None
        for req in batch.requests:
            if len(req.tokens) > 0 and req.meta["kind"] == 3:
                comm.all_reduce(req.tokens)
            elif rank == 0:
                comm.barrier()
        while batch.pending:
            batch.pending -= 1
        sizes = [comm.size(x) for x in batch.items if x.live]
        return comm.all_gather(sizes) if batch.flag else None
    ''')


def _gates():
    tree = ast.parse(SOURCE)
    src = SourceText(SOURCE)
    return function_gates(tree.body[0].body, "prog.py", src, suppressions_in(SOURCE))


def test_every_form_of_gate_is_found_with_its_text_and_site():
    found = {(g.kind, g.condition, g.line) for g in _gates()}
    assert found == {
        ("exit", "not batch.requests", 2),
        ("for", "batch.requests", 4),
        ("if", 'len(req.tokens) > 0 and req.meta["kind"] == 3', 5),
        ("elif", "rank == 0", 7),
        ("while", "batch.pending", 9),
        ("for", "batch.items", 11),
        ("filter", "x.live", 11),
        ("ifexp", "batch.flag", 12),
    }
    assert all(g.site == f"prog.py:{g.line}" for g in _gates())


def test_regions_give_the_outcome_that_lets_a_line_run():
    gates = _gates()
    at6 = {g.condition: g.outcome_at(6) for g in enclosing(gates, 6)}
    assert at6 == {"not batch.requests": False, "batch.requests": True,
                   'len(req.tokens) > 0 and req.meta["kind"] == 3': True}
    at8 = {g.condition: g.outcome_at(8) for g in enclosing(gates, 8)}
    assert at8['len(req.tokens) > 0 and req.meta["kind"] == 3'] is False
    assert at8["rank == 0"] is True
    # a column picks the arm of a conditional expression on one line
    line12 = SOURCE.splitlines()[11]
    ifexp = next(g for g in gates if g.kind == "ifexp")
    assert ifexp.outcome_at(12, line12.index("comm.all_gather")) is True
    assert ifexp.outcome_at(12, line12.index("None")) is False
    assert enclosing(gates, 1) == ()


def test_operands_are_names_chains_constant_subscripts_len_and_comparison_sides():
    gate = next(g for g in _gates() if g.kind == "if")
    assert [o.text for o in gate.operands] == ["len(req.tokens)", 'req.meta["kind"]']
    assert [o.kind for o in gate.operands] == ["len", "subscript"]

    class Req:
        tokens = [1, 2]
        meta = {"kind": 3}
    values = [eval(o.code, {}, {"req": Req}) for o in gate.operands]
    assert values == [2, 3]


def test_the_suppression_comment_on_the_gate_line():
    gate = next(g for g in _gates() if g.line == 2)
    assert gate.suppression == Suppression(2, ("tp", "pp"), "same requests on the group")
    assert gate.suppression.covers("tp") and not gate.suppression.covers("dp")
    assert parse_suppression("# trtsim: uniform -- configured alike", 4).covers("dp")
    assert parse_suppression("# an ordinary comment", 4) is None
    with pytest.raises(ValueError, match="line 9"):
        parse_suppression("# trtsim: uniform(tp)", 9)
    assert suppressions_in('x = "# trtsim: uniform(tp)"\n') == {}     # in a string: no comment


def _observed(batch, rank):
    if batch is None:
        return 0
    total = 0
    for item in batch:
        if item > rank:
            total += item
    return total


def test_gates_for_a_code_object_are_cached_and_located():
    code = _observed.__code__
    first = gates_for(code)
    assert gates_for(code) is first                      # one answer per code object
    assert [g.condition for g in first] == ["batch is None", "batch", "item > rank"]
    line = code.co_firstlineno + 6                        # total += item
    assert [(g.condition, g.outcome_at(line)) for g in gates_at(code, line)] == [
        ("batch is None", False), ("batch", True), ("item > rank", True)]
    assert gates_at(code, code.co_firstlineno) == ()


def test_code_without_source_has_no_gates():
    code = compile("if x:\n    y = 1\n", "<no file>", "exec")
    assert gates_for(code) == ()
