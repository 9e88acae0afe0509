"""Reading the paths given to ``trtsim lint``: files and packages, with limits.

A path that does not exist, a file that is not Python source, or a file given by name that
does not parse is bad input (``LintInputError``: one line naming the path and why). A file
found inside a folder that does not parse (a template, another Python's syntax) is skipped and
listed in the result, so one odd file does not stop a package's check.
"""

from __future__ import annotations

import ast
import os
import warnings

from ..checks import MAX_FILES
from ..gates.source import MAX_SOURCE_BYTES, SourceText
from ..gates.suppress import suppressions_in
from .program import Module

_SKIP_DIRS = frozenset({".git", "__pycache__", ".venv", "venv", "node_modules", ".tox",
                        "build", "dist", ".eggs", ".mypy_cache", ".pytest_cache"})


class LintInputError(ValueError):
    """A path the lint cannot read as Python source."""


def python_files(paths: list[str]) -> list[tuple[str, bool]]:
    """(file, given by name) for every .py file under the paths, sorted, each once."""
    out: dict[str, bool] = {}
    for path in paths:
        if os.path.isfile(path):
            if not path.endswith((".py", ".pyi")):
                raise LintInputError(f"{path}: not a Python source file (.py)")
            out[os.path.normpath(path)] = True
        elif os.path.isdir(path):
            for folder, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
                for name in files:
                    if name.endswith(".py"):
                        out.setdefault(os.path.normpath(os.path.join(folder, name)), False)
                if len(out) > MAX_FILES:
                    raise LintInputError(f"{path}: more than {MAX_FILES:,} Python files")
        else:
            raise LintInputError(f"{path}: no such file or folder")
    return sorted(out.items())


def module_name(path: str) -> str:
    """The dotted name of a file: its folders up to the topmost package (``__init__.py``)."""
    folder, base = os.path.split(os.path.abspath(path))
    parts = [os.path.splitext(base)[0]]
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        folder, name = os.path.split(folder)
        parts.insert(0, name)
    return ".".join(parts)


def load(paths: list[str]) -> tuple[list[Module], list[str]]:
    """(the parsed modules, ``path: why`` of each skipped file)."""
    modules, skipped = [], []
    for path, named in python_files(paths):
        try:
            module = _read(path)
        except LintInputError as exc:
            if named:
                raise
            skipped.append(str(exc))
            continue
        modules.append(module)
    return modules, skipped


def _read(path: str) -> Module:
    try:
        size = os.path.getsize(path)
        if size > MAX_SOURCE_BYTES:
            raise LintInputError(f"{path}: {size:,} bytes, more than the limit of "
                                 f"{MAX_SOURCE_BYTES:,} bytes of one source file")
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise LintInputError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LintInputError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # invalid escapes in old sources
            tree = ast.parse(text, path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        line = getattr(exc, "lineno", None)
        where = f" at line {line}" if line else ""
        raise LintInputError(f"{path}: does not parse as Python{where} "
                             f"({getattr(exc, 'msg', None) or type(exc).__name__})") from None
    try:
        marks = suppressions_in(text)
    except ValueError as exc:
        raise LintInputError(f"{path}: {exc}") from None
    return Module(path, module_name(path), text, tree, SourceText(text), marks)
