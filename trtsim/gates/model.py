"""Finding the gates of one function body with ``ast``.

A gate governs *regions* of the function: source ranges reached only with one outcome of its
test. ``if t: A else: B`` gives A with True and B with False; ``if t: return`` gives the rest
of its block with False (the line was reached past the early exit), ``assert t`` the rest of
its block with True; a ``while`` its body with
True; a ``for`` loop's iteration its body (True: the loop ran); a conditional expression and
a comprehension's filters and iterations the same on the sub-expressions. Nested ``def``,
``lambda`` and ``class`` bodies are their own code objects and are left to their own call.
``match`` statements are not gates here (their cases are patterns, not tests).
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field

from .source import SourceText
from .suppress import Suppression

Pos = tuple[int, int]                       # (line, column): ast's 1-based line, 0-based column
_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@dataclass(frozen=True)
class Region:
    """A source range ``[start, end)`` reached only when the gate's test gave ``outcome``."""

    start: Pos
    end: Pos
    outcome: bool

    def holds(self, line: int, col: int | None = None) -> bool:
        """Whether the position lies in the range (a line alone: any column of it)."""
        if col is None:
            return self.start[0] <= line <= self.end[0]
        return self.start <= (line, col) < self.end


@dataclass(frozen=True)
class Operand:
    """One value the gate's test reads: a name, an attribute chain, a subscript by a
    constant, ``len()`` of one of those, or a side of a comparison built from them."""

    text: str
    kind: str                               # name | attribute | subscript | len
    expr: ast.expr = field(compare=False, repr=False)

    @functools.cached_property
    def code(self):
        """The operand compiled for ``eval`` in the frame's globals and locals: it reads
        names, attributes and subscripts, and calls nothing but ``len``."""
        return compile(ast.Expression(body=self.expr), "<gate operand>", "eval")


@dataclass(frozen=True)
class Gate:
    """A condition that decides whether parts of a function run."""

    path: str
    line: int
    col: int
    kind: str                   # if | elif | while | for | ifexp | filter | exit | assert
    condition: str                          # the test's source text (a loop: its iterable)
    operands: tuple[Operand, ...]
    regions: tuple[Region, ...]
    suppression: Suppression | None = None
    test: ast.expr = field(compare=False, repr=False, default=None)

    @property
    def site(self) -> str:
        """``path:line`` of the test."""
        return f"{self.path}:{self.line}"

    def outcome_at(self, line: int, col: int | None = None) -> bool | None:
        """The outcome that lets a position run; None when the gate does not govern it."""
        for region in self.regions:
            if region.holds(line, col):
                return region.outcome
        return None


def enclosing(gates: tuple[Gate, ...], line: int, col: int | None = None) -> tuple[Gate, ...]:
    """The gates that govern a position, in source order."""
    return tuple(g for g in gates if g.outcome_at(line, col) is not None)


def function_gates(body: list[ast.stmt] | ast.expr, path: str, src: SourceText,
                   suppressions: dict[int, Suppression] | None = None) -> tuple[Gate, ...]:
    """Every gate of one code object's body (a function's statements, a module's, or a
    lambda's or comprehension's expression), in source order."""
    out: list[Gate] = []
    finder = _Finder(path, src, suppressions or {}, out)
    if isinstance(body, list):
        finder.block(body)
    else:
        finder.expr(body)
    return tuple(sorted(out, key=lambda g: (g.line, g.col)))


def _start(node: ast.AST) -> Pos:
    return (node.lineno, node.col_offset)


def _end(node: ast.AST) -> Pos:
    return (node.end_lineno, node.end_col_offset)


def _part_start(node: ast.AST) -> Pos:
    """Where a comprehension's part begins (a generator: its target)."""
    return _start(node.target if isinstance(node, ast.comprehension) else node)


def exits(stmts: list[ast.stmt]) -> bool:
    """Whether a block always leaves by return, raise, continue or break."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, _EXITS):
        return True
    if isinstance(last, (ast.With, ast.AsyncWith)):
        return exits(last.body)
    return isinstance(last, ast.If) and exits(last.body) and exits(last.orelse)


class _Finder:
    """Walks one body; appends the gates it meets."""

    def __init__(self, path, src, suppressions, out):
        self.path, self.src, self.suppressions, self.out = path, src, suppressions, out

    def gate(self, test: ast.expr, kind: str, regions: list[Region]) -> None:
        regions = [r for r in regions if r.start < r.end]
        if not regions:
            return
        self.out.append(Gate(self.path, test.lineno, test.col_offset, kind,
                             self.src.segment(test), operands(test, self.src), tuple(regions),
                             self.suppressions.get(test.lineno), test))

    def block(self, stmts: list[ast.stmt]) -> None:
        for i, stmt in enumerate(stmts):
            rest = stmts[i + 1:]
            if isinstance(stmt, ast.If) and rest and exits(stmt.body):
                self.if_(stmt, [Region(_start(rest[0]), _end(rest[-1]), False)])
            elif isinstance(stmt, ast.Assert) and rest:
                # the rest of the block runs only where the assertion held
                self.gate(stmt.test, "assert", [Region(_start(rest[0]), _end(rest[-1]), True)])
                self.stmt(stmt)
            else:
                self.stmt(stmt)

    def if_(self, stmt: ast.If, rest: list[Region]) -> None:
        """``if``/``elif``; with ``rest``, an early exit (``if t: ... return``): the rest of
        the block runs only with the test False, and so for its ``elif`` arms that exit."""
        kind = "exit" if rest else "elif" if self.src.starts_with(stmt, "elif") else "if"
        self.gate(stmt.test, kind, self.span(stmt.body, True) + self.span(stmt.orelse, False)
                  + rest)
        self.expr(stmt.test)
        self.block(stmt.body)
        orelse = stmt.orelse
        if rest and len(orelse) == 1 and isinstance(orelse[0], ast.If) and \
                exits(orelse[0].body):
            self.if_(orelse[0], rest)
        else:
            self.block(orelse)

    def span(self, stmts: list[ast.stmt], outcome: bool) -> list[Region]:
        return [Region(_start(stmts[0]), _end(stmts[-1]), outcome)] if stmts else []

    def stmt(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for deco in stmt.decorator_list:
                self.expr(deco)
            return
        if isinstance(stmt, ast.If):
            self.if_(stmt, [])
            return
        if isinstance(stmt, ast.While):
            self.gate(stmt.test, "while", self.span(stmt.body, True))
            self.expr(stmt.test)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self.gate(stmt.iter, "for", self.span(stmt.body, True))
            self.expr(stmt.iter)
        else:
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self.expr(child)
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, name, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                self.block(inner)
        for handler in getattr(stmt, "handlers", ()):
            self.block(handler.body)
        for case in getattr(stmt, "cases", ()):
            self.block(case.body)

    def expr(self, node: ast.expr) -> None:
        """Gates inside an expression: conditional expressions and comprehensions."""
        stack = [node]
        while stack:
            cur = stack.pop()
            if isinstance(cur, _SCOPES):
                continue
            if isinstance(cur, ast.IfExp):
                self.gate(cur.test, "ifexp", [Region(_start(cur.body), _end(cur.body), True),
                                              Region(_start(cur.orelse), _end(cur.orelse), False)])
            elif isinstance(cur, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                self.comprehension(cur)
            stack.extend(ast.iter_child_nodes(cur))

    def comprehension(self, node) -> None:
        """A generator's iteration and each filter govern the result expressions and what
        follows them among the generators."""
        results = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        produced = [Region(_start(r), _end(r), True) for r in results]
        last = _end(node)                   # a generator node has no position of its own
        for i, gen in enumerate(node.generators):
            after = node.generators[i + 1:]
            later = [*gen.ifs, *after]
            self.gate(gen.iter, "for", produced + (
                [Region(_part_start(later[0]), last, True)] if later else []))
            for j, cond in enumerate(gen.ifs):
                later = [*gen.ifs[j + 1:], *after]
                self.gate(cond, "filter", produced + (
                    [Region(_part_start(later[0]), last, True)] if later else []))


def _simple(node: ast.expr) -> str | None:
    """The operand kind of a name, attribute chain or constant subscript of one; else None."""
    if isinstance(node, ast.Name):
        return "name"
    if isinstance(node, ast.Attribute):
        return "attribute" if _simple(node.value) else None
    if isinstance(node, ast.Subscript):
        return "subscript" if isinstance(node.slice, ast.Constant) and _simple(node.value) \
            else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id == "len" and len(node.args) == 1 and not node.keywords:
        return "len" if _simple(node.args[0]) else None
    return None


def operands(test: ast.expr, src: SourceText) -> tuple[Operand, ...]:
    """The operands of a test, outermost first, each once."""
    out: dict[str, Operand] = {}
    stack = [test]
    while stack:
        node = stack.pop(0)
        kind = _simple(node)
        if kind is not None:
            text = src.segment(node)
            out.setdefault(text, Operand(text, kind, node))
            continue
        if isinstance(node, _SCOPES) or isinstance(node, (ast.ListComp, ast.SetComp,
                                                          ast.GeneratorExp, ast.DictComp)):
            continue                        # their names are bound inside: nothing to read
        stack.extend(c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr))
    return tuple(out.values())
