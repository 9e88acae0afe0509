"""Gates by code object, for a caller that holds a frame: parsed once per module, found once
per code object (keyed by file and first line), never per call.

A code object's ``co_firstlineno`` is its first decorator's line for a decorated function, the
``def`` line otherwise, 1 for a module; comprehensions and lambdas are their own code objects
and are found by their line too. Source comes from ``linecache`` (the text the traceback
machinery shows). Code whose source cannot be read or parsed has no gates.
"""

from __future__ import annotations

import ast
import functools
import linecache

from .model import Gate, enclosing, function_gates
from .source import MAX_SOURCE_BYTES, SourceText
from .suppress import suppressions_in

_CACHED_MODULES = 256
_CACHED_CODES = 8192
_EXPRESSION_SCOPES = {"<lambda>": ast.Lambda, "<listcomp>": ast.ListComp,
                      "<setcomp>": ast.SetComp, "<dictcomp>": ast.DictComp,
                      "<genexpr>": ast.GeneratorExp}


@functools.lru_cache(maxsize=_CACHED_MODULES)
def _module(filename: str):
    """(tree, source text, suppressions) of a file, or None when unreadable or unparsable."""
    text = "".join(linecache.getlines(filename))
    if not text or len(text) > MAX_SOURCE_BYTES:
        return None
    try:
        tree = ast.parse(text, filename)
    except (SyntaxError, ValueError):
        return None
    try:
        marks = suppressions_in(text)
    except ValueError:
        marks = {}                           # a malformed comment: the lint says so; not here
    return tree, SourceText(text), marks


def _first_line(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", ())
    return min([node.lineno, *(d.lineno for d in decorators)])


def _scope(tree: ast.Module, name: str, first_line: int):
    """The node whose code object starts at ``first_line`` with ``name``."""
    if name == "<module>":
        return tree.body
    wanted = _EXPRESSION_SCOPES.get(name)
    for node in ast.walk(tree):
        if wanted is not None:
            if isinstance(node, wanted) and node.lineno == first_line:
                return node.body if isinstance(node, ast.Lambda) else node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and node.name == name and _first_line(node) == first_line:
            return node.body
    return None


@functools.lru_cache(maxsize=_CACHED_CODES)
def _gates(filename: str, name: str, first_line: int) -> tuple[Gate, ...]:
    module = _module(filename)
    if module is None:
        return ()
    tree, src, marks = module
    scope = _scope(tree, name, first_line)
    if scope is None:
        return ()
    if isinstance(scope, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return tuple(g for g in function_gates(scope, filename, src, marks))
    return function_gates(scope, filename, src, marks)


def gates_for(code) -> tuple[Gate, ...]:
    """Every gate of a code object's body (source order), cached per (file, name, first
    line): a frame's ``f_code`` asks once."""
    return _gates(code.co_filename, code.co_name, code.co_firstlineno)


def gates_at(code, line: int, col: int | None = None) -> tuple[Gate, ...]:
    """The gates of ``code`` that govern ``line`` (a frame's ``f_lineno``), with the outcome
    each needed there: ``gate.outcome_at(line)``."""
    return enclosing(gates_for(code), line, col)
