"""Gates in trtsim's hands: a module's functions recompiled with each test wrapped.

As pytest rewrites assertions, a flip launch rewrites gates: ``if cond:`` becomes
``if __trtsim_gate__(ID, cond):`` (and so ``elif``, ``while``, conditional expressions and
comprehension filters), ``for x in it:`` becomes ``for x in __trtsim_loop__(ID, it):``. The
wrappers return the test's own value, so the program runs as written, except for the one
evaluation a replay flips (``gate_control``).

The module's source is parsed and compiled again under its own file name, with every wrapper
at its test's position: line numbers, tracebacks and call sites do not change. The new code
objects replace the ``__code__`` of the module's functions (found by qualified name and first
line), methods, static and class methods, properties and ``functools.wraps`` targets, in
place: a module imported before the launch (a test file's top) and every name imported from
it see the rewrite; ``restore`` puts the old code back. Limits: C extensions have no source;
``match`` statements are not gates; a function object made before the launch by a factory
(a closure) keeps its code; a decision cached before the launch was taken unrewritten.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import sys
import types

GATE_FN, LOOP_FN = "__trtsim_gate__", "__trtsim_loop__"


class _Wrap(ast.NodeTransformer):
    """Wraps every gate test of a module; ``sites`` gets (path, line, col) per wrapper."""

    def __init__(self, path: str, sites: list):
        self.path, self.sites = path, sites

    def wrap(self, test: ast.expr, fn: str) -> ast.expr:
        self.sites.append((self.path, test.lineno, test.col_offset))
        name = ast.copy_location(ast.Name(fn, ast.Load()), test)
        index = ast.copy_location(ast.Constant(len(self.sites) - 1), test)
        return ast.copy_location(ast.Call(name, [index, test], []), test)

    def visit_If(self, node):
        self.generic_visit(node)
        node.test = self.wrap(node.test, GATE_FN)
        return node

    visit_While = visit_If
    visit_IfExp = visit_If

    def visit_For(self, node):
        self.generic_visit(node)
        node.iter = self.wrap(node.iter, LOOP_FN)
        return node

    def visit_comprehension(self, node):
        self.generic_visit(node)
        node.ifs = [self.wrap(t, GATE_FN) for t in node.ifs]
        if not node.is_async:
            node.iter = self.wrap(node.iter, LOOP_FN)
        return node


def _codes(code: types.CodeType, out: dict) -> dict:
    """Every code object under ``code``, by (qualified name, first line)."""
    out[(code.co_qualname, code.co_firstlineno)] = code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _codes(const, out)
    return out


def _functions(namespace: dict, path: str, seen: set):
    """The function objects a module's namespace holds that were defined in ``path``."""
    for value in list(namespace.values()):
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            yield from (f for f in (value.fget, value.fset, value.fdel)
                        if isinstance(f, types.FunctionType) and f.__code__.co_filename == path)
            continue
        if isinstance(value, type):
            home = sys.modules.get(getattr(value, "__module__", None) or "")
            if getattr(home, "__file__", None) == path:      # a class of this module
                yield from _functions(dict(vars(value)), path, seen)
            continue
        while isinstance(value, types.FunctionType):
            if value.__code__.co_filename == path:
                yield value
            value = getattr(value, "__wrapped__", None)


def compile_source(source, path: str, sites: list | None) -> types.CodeType | None:
    """A module's code compiled from ``source`` under its own path, with every gate wrapped
    (``sites`` gets their places) or, with ``sites`` None, as written; None if it does not
    parse."""
    try:
        tree = ast.parse(source, path)
    except (SyntaxError, ValueError):
        return None
    if sites is not None:
        start = len(sites)
        tree = _Wrap(path, sites).visit(tree)
        ast.fix_missing_locations(tree)
    try:
        return compile(tree, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        if sites is not None:
            del sites[start:]
        return None


def swap_codes(module: types.ModuleType, code: types.CodeType) -> list:
    """Give the module's functions the code of the same name and first line in ``code``;
    the (function, old code) pairs."""
    path = code.co_filename
    new = _codes(code, {})
    swapped = []
    for fn in _functions(vars(module), path, set()):
        old = fn.__code__
        fresh = new.get((old.co_qualname, old.co_firstlineno))
        if fresh is not None and fresh.co_freevars == old.co_freevars and fresh is not old:
            swapped.append((fn, old))
            fn.__code__ = fresh
    return swapped


def rewrite_module(module: types.ModuleType, sites: list, control) -> list:
    """Rewrite ``module``'s gates in place; the (function, old code) pairs to restore.
    A module without readable Python source is left as it is."""
    path = getattr(module, "__file__", None)
    if not path or not path.endswith(".py"):
        return []
    code = compile_source("".join(linecache.getlines(path)), path, sites)
    if code is None:
        return []
    swapped = swap_codes(module, code)
    namespace = vars(module)
    namespace[GATE_FN], namespace[LOOP_FN] = control.gate, control.loop
    swapped.append((module, None))
    return swapped


def restore(swapped: list) -> None:
    """Put back the code the rewrite replaced, and take the wrappers' names away."""
    for obj, code in reversed(swapped):
        if code is not None:
            obj.__code__ = code
        else:
            namespace = vars(obj)
            namespace.pop(GATE_FN, None)
            namespace.pop(LOOP_FN, None)


def module_of(program) -> str | None:
    """The module a rank program was written in (through launch's and functools' wrappers)."""
    for _ in range(8):
        inner = getattr(program, "program", None) or getattr(program, "func", None) \
            or getattr(program, "__wrapped__", None)
        if inner is None:
            break
        program = inner
    module = inspect.getmodule(program)
    return module.__name__ if module is not None else None
