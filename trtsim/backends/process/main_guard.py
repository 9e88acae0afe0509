"""A launch on the process backends from a script's top level, found before any rank starts.

Each rank of a process backend re-imports the main script (multiprocessing does, to find the
rank program), so a script that calls ``trtsim.launch`` outside an ``if __name__ ==
"__main__":`` block starts the launch again in every rank, which dies while starting: some
hundred lines of multiprocessing errors, then ``rank 1 exited with status 1 without a
result``. So the launcher looks first: it finds the main script's statement through which
this launch was called (the ``<module>`` frame of ``__main__`` on the call stack) and refuses
the launch, in one line, when that statement is not under such a guard. The refusal is a
``SystemExit`` with that line: the script cannot run as written, the call is at its top
level (nothing of the program is there to handle an error), and Python prints the line
alone, where a ValueError would bury it under a traceback of trtsim's own frames.
"""

from __future__ import annotations

import ast
import os
import sys
from types import FrameType

ADD_GUARD = ("the process backends re-import the main script in every rank, and this "
             "launch runs at its top level, so every rank would start it again: put the "
             "launch (or the call that leads to it) under `if __name__ == \"__main__\":`")


def _reimported(main) -> bool:
    """Whether spawned ranks run ``main``'s top level again (``python -m pkg`` runs
    ``pkg.__main__``, which multiprocessing leaves alone)."""
    spec = getattr(main, "__spec__", None)
    return spec is None or not (spec.name == "__main__" or spec.name.endswith(".__main__"))


def _is_guard(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.If) and any(
        isinstance(n, ast.Name) and n.id == "__name__" for n in ast.walk(stmt.test))


def unguarded_launch_site() -> str | None:
    """``file:line`` of the main script's top-level statement this launch runs from when it
    is not under an ``if __name__ == ...`` block; None when it is, or when there is no main
    script (an interactive session, ``python -c``, a notebook)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if not path or not _reimported(main):
        return None
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "<module>"
                                     and frame.f_globals is vars(main)):
        frame = frame.f_back
    if frame is None:
        return None
    line = frame.f_lineno
    try:
        with open(path, encoding="utf-8") as f:
            body = ast.parse(f.read()).body
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None
    for stmt in body:
        if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            return None if _is_guard(stmt) else f"{os.path.relpath(path)}:{line}"
    return None


def refuse_unguarded_launch() -> None:
    """End the script with one line (where, and what to add) when this launch runs from the
    main script's unguarded top level."""
    site = unguarded_launch_site()
    if site is not None:
        raise SystemExit(f"trtsim: {site}: {ADD_GUARD}")
