"""One walk of one function (or a module's top level), in statement order.

The environment maps local names to taints; branches are walked on copies and joined after;
loop bodies twice, so a value carried round a loop reaches its next iteration. A value assigned
while a rank-local test is in force (an enclosing ``if``/``while``/``for``, an earlier early
exit, an ``except`` handler) takes the test's taint: the control dependence that makes a flag
set "on arrival of a request" rank-local. What outlives the call - attributes of ``self``,
module globals (a ``ContextVar`` among them), the result, arguments passed on - goes to the
program-wide ``Facts``, together with the taint of the function being reached at all.
"""

from __future__ import annotations

import ast

from ..gates.model import exits
from .origins import EMPTY, Taint, join, origin
from .sources import config_annotation, option_name, uniform_name
from .stores import Stores
from .values import Values, dotted


DATA_ERRORS = frozenset({"ValueError", "TypeError", "KeyError", "IndexError", "AttributeError",
                         "ZeroDivisionError", "StopIteration", "ImportError",
                         "ModuleNotFoundError", "NotImplementedError", "AssertionError",
                         "LookupError", "ArithmeticError", "OverflowError", "UnicodeError",
                         "UnicodeDecodeError", "UnicodeEncodeError", "JSONDecodeError"})


class Flow(Values, Stores):
    """The walk of ``fn`` (None: the module's top level) against ``facts``."""

    def __init__(self, program, module, fn, facts, config):
        self.program, self.module, self.fn, self.facts = program, module, fn, facts
        self.extra, self.declared = config.collectives, config.uniform
        self.path = module.path
        self.env: dict[str, Taint] = {}
        self.control: list[Taint] = []
        self.declared_global: set[str] = set()
        self.rebound: set[str] = set()
        self.assigned: dict[str, list[ast.expr]] = {}     # rendered when a group asks
        self.current: ast.stmt | None = None
        self.reads: set = set()                 # what this walk read from the facts
        self.built_here: dict[str, Taint] = {}  # a constructor's own attributes, so far

    # -- helpers the expression half uses ---------------------------------------------------
    def site(self, node: ast.AST) -> str:
        return f"{self.path}:{getattr(node, 'lineno', 0)}"

    def text(self, node: ast.AST) -> str:
        return dotted(node) or self.module.src.segment(node)

    def ctrl(self) -> Taint:
        return join(*self.control) if self.control else EMPTY

    def alternatives(self, name: str) -> list[str]:
        return [self.text(node) for node in self.assigned.get(name, ())]

    def reached(self) -> Taint:
        """The taint of this function running at all: the conditions of its analysed call
        sites, or - called from nowhere in the analysed code, with arguments - once per
        outside call, which is a rank's own input."""
        fn = self.fn
        if fn is None or fn.is_constructor:
            return EMPTY
        if fn.key in self.facts.called:
            return self.facts.read(self.facts.reach, fn.key, self.reads)
        if not any(self.input_param(p) for p in fn.own_params):
            return EMPTY
        return origin("input", f"{fn.qualname}({', '.join(fn.own_params)}) called from "
                      "outside the analysed code, once per call", fn.site(fn.node))

    # -- the walk ---------------------------------------------------------------------------
    def run(self) -> None:
        fn = self.fn
        if fn is not None:
            self.parameters()
            self.block(fn.node.body)
        else:
            self.block(self.module.tree.body)

    def parameters(self) -> None:
        fn = self.fn
        for i, p in enumerate(fn.params):
            if (i == 0 and fn.is_method) or uniform_name(p):
                self.env[p] = EMPTY
            elif fn.key in self.facts.called:      # what the analysed callers pass
                self.env[p] = self.facts.read(self.facts.params, (fn.key, p), self.reads)
            elif not self.input_param(p):
                self.env[p] = EMPTY
            else:
                self.env[p] = origin("input", f"parameter {p} of {fn.qualname}() (called "
                                     "from outside the analysed code)", fn.site(fn.node))

    def input_param(self, name: str) -> bool:
        """Whether a parameter can carry a rank's own data: not the configuration (by name
        or annotation), not an option (a flag, or a default that is a constant other than
        None), and not a constructor's (construction takes the deployment's settings)."""
        fn = self.fn
        if fn.is_constructor or option_name(name):
            return False
        args = fn.node.args
        positional = [*args.posonlyargs, *args.args]
        defaults = dict(zip([a.arg for a in positional[len(positional) - len(args.defaults):]],
                            args.defaults))
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d})
        default = defaults.get(name)
        if isinstance(default, ast.Constant) and default.value is not None:
            return False
        note = next((a.annotation for a in (*positional, *args.kwonlyargs) if a.arg == name),
                    None)
        if note is not None and (config_annotation(note, self.text) or
                                 self.text(note) in ("bool", "str")):
            return False
        return True

    def block(self, stmts: list[ast.stmt]) -> None:
        pushed = 0
        for stmt in stmts:
            self.stmt(stmt)
            if isinstance(stmt, (ast.If, ast.Assert)) and \
                    (isinstance(stmt, ast.Assert) or exits(stmt.body)):
                if self.program.splits(stmt.test):
                    self.control.append(EMPTY)       # a root/non-root split: see branches
                    pushed += 1
                    continue
                self.control.append(self.facts.read(
                    self.facts.tests, (self.path, stmt.test.lineno, stmt.test.col_offset),
                    self.reads))
                pushed += 1
        del self.control[len(self.control) - pushed:]

    def branches(self, taint: Taint, *blocks: list[ast.stmt], test=None) -> None:
        """Walk each block on a copy of the environment under ``taint``; join after. A local
        set in a branch is, after the join, decided by the test too (within the branch it is
        not: every member that runs the branch took the same outcome)."""
        if test is not None and self.program.splits(test):
            # a root/non-root split (``is_last_rank``, ``rank == src``) decides which part of
            # a protocol a member plays, not data: what one member computes or sets there is
            # what the collective of the split hands (or pairs with) the others
            taint = EMPTY
        before, results = self.env, []
        self.control.append(taint)
        for body in blocks:
            self.env = dict(before)
            self.block(body)
            results.append(self.env)
        self.control.pop()
        merged = dict(before)
        for env in results:
            for key, value in env.items():
                if value is before.get(key):
                    continue
                merged[key] = join(merged.get(key, EMPTY), value, taint)
        self.env = merged

    def stmt(self, stmt: ast.stmt) -> None:
        self.current = stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return                                   # their own code objects
        if isinstance(stmt, ast.Assign):
            taint = self.expr(stmt.value)
            for target in stmt.targets:
                self.assign(target, taint, stmt.value)
        elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
            if stmt.value is not None:
                extra = self.expr(stmt.target) if isinstance(stmt, ast.AugAssign) else EMPTY
                self.assign(stmt.target, join(self.expr(stmt.value), extra), stmt.value)
        elif isinstance(stmt, ast.Expr):
            if isinstance(stmt.value, ast.Call):
                self.call(stmt.value, statement=True)
            else:
                self.expr(stmt.value)
        elif isinstance(stmt, ast.Return):
            if self.fn is not None and stmt.value is not None:
                taint = join(self.expr(stmt.value), self.ctrl())
                self.facts.add(self.facts.returns, self.fn.key, taint)
            elif self.fn is not None:       # a bare return: whether it returns (the add
                # is tried even with no taint: the walk's writes must not hang on the facts)
                self.facts.add(self.facts.returns, self.fn.key, self.ctrl())
        elif isinstance(stmt, ast.If):
            self.branches(self.test(stmt.test), stmt.body, stmt.orelse, test=stmt.test)
        elif isinstance(stmt, ast.While):
            taint = self.test(stmt.test)
            self.branches(taint, stmt.body, stmt.body)
            self.block(stmt.orelse)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            taint = self.test(stmt.iter)
            self.assign(stmt.target, taint, stmt.iter)
            self.branches(taint, stmt.body, stmt.body)
            self.block(stmt.orelse)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                taint = self.expr(item.context_expr)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, taint, item.context_expr)
            self.block(stmt.body)
        elif isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            self.try_(stmt)
        elif isinstance(stmt, (ast.Global, ast.Nonlocal)):
            self.declared_global.update(stmt.names)
        elif isinstance(stmt, ast.Assert):
            self.test(stmt.test)
        elif isinstance(stmt, ast.Match):
            taint = self.expr(stmt.subject)
            self.branches(taint, *(case.body for case in stmt.cases))
        else:
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self.expr(child)

    def try_(self, stmt) -> None:
        self.block(stmt.body)
        for handler in stmt.handlers:
            caught = self.caught(stmt, handler)
            if handler.name:
                self.env[handler.name] = caught
            self.branches(caught, handler.body)
        self.block(stmt.orelse)
        self.block(stmt.finalbody)

    def caught(self, stmt, handler) -> Taint:
        """What an ``except`` clause's running depends on. A data error (``ValueError``,
        ``KeyError``, ``ImportError``...) is raised alike on every rank that computes the same
        values: it is as rank-local as the values the ``try`` body reads. Anything else (a
        bare ``except``, ``Exception``, ``OSError``, ``RuntimeError``, a timeout) can strike
        one rank alone: a caught exception is a rank-local origin."""
        types = handler.type.elts if isinstance(handler.type, ast.Tuple) else \
            [handler.type] if handler.type is not None else []
        if types and all(dotted(t).rsplit(".", 1)[-1] in DATA_ERRORS for t in types):
            names = {n.id for s in stmt.body for n in ast.walk(s) if isinstance(n, ast.Name)}
            return join(*(self.env.get(n, EMPTY) for n in sorted(names)))
        shown = f"except {self.text(handler.type)}" if handler.type else "except"
        return origin("exception", shown, self.site(handler))
