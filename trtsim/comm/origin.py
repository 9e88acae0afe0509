"""Where a call comes from: its call site (file:line) and its purpose key (the call stack at
function granularity).

Design note. An unlabelled collective says what it is for only through the code that calls
it. Comparing call sites line by line is wrong both ways on real code: the idiom
``if rank == 0: dist.broadcast(name, 0) else: dist.broadcast(None, 0)`` enters one collective
from two lines (a false positive), while one helper line reached from two callers serves two
purposes (a blind spot). So the purpose key is the chain of qualified function names, from the
caller of the communication layer outward to the rank program's entry: two lines of one
function are one purpose, one helper reached from two callers is two. Frames of trtsim's
communication layer are skipped, and so are frames a user declares as wrappers:

- ``@trtsim.collective_wrapper`` on a function that only forwards to a collective;
- ``launch(..., wrappers=("mypkg.comm_utils",))``: every frame of those modules.

The walk stops at the backends' one entry into the rank program (``call_rank_program``).
"""

from __future__ import annotations

import functools
import os
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

_COMM_DIR = os.path.dirname(os.path.abspath(__file__))
_LAUNCH_FILE = os.path.join(os.path.dirname(_COMM_DIR), "launching.py")


def call_rank_program(program: Callable, dist, args: tuple) -> Any:
    """Every backend enters a rank program here: purpose keys end at this frame."""
    return program(dist, *args)


def program_traceback(exc: BaseException) -> str:
    """The traceback of an exception a rank program raised, starting in the rank program
    (the backend's frames up to ``call_rank_program`` are left out)."""
    tb = exc.__traceback__
    probe = tb
    while probe is not None and probe.tb_frame.f_code is not _ENTRY:
        probe = probe.tb_next
    if probe is not None and probe.tb_next is not None:
        tb = probe.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def _call_through(fn: Callable, args: tuple, kwargs: dict) -> Any:
    return fn(*args, **kwargs)


_ENTRY = call_rank_program.__code__
_THROUGH = _call_through.__code__


def collective_wrapper(fn: Callable) -> Callable:
    """Declare ``fn`` a wrapper around collectives: its frame is no part of a call's purpose
    or call site, so calls through it are told apart by who called the wrapper."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return _call_through(fn, args, kwargs)
    return wrapper


@dataclass(frozen=True)
class Origin:
    """``callsite``: ``file:line in function`` of the innermost user frame; ``purpose``: the
    qualified function names from there outward, ``inner < outer``."""

    callsite: str
    purpose: str


@dataclass
class OriginFinder:
    """Finds the origin of calls for one rank; ``wrappers`` are module names (prefixes)
    whose frames are skipped. Keeps its own cache of purpose strings."""

    wrappers: tuple[str, ...] = ()
    _purposes: dict = field(default_factory=dict, repr=False)
    _skip_code: dict = field(default_factory=dict, repr=False)   # code -> its file is skipped
    _sites: dict = field(default_factory=dict, repr=False)       # (code, line) -> call site

    def _skipped(self, frame) -> bool:
        code = frame.f_code
        skip = self._skip_code.get(code)
        if skip is None:
            name = code.co_filename
            module = frame.f_globals.get("__name__", "")
            skip = self._skip_code[code] = (
                name.startswith(_COMM_DIR) or name == _LAUNCH_FILE
                or any(module == w or module.startswith(w + ".") for w in self.wrappers))
        if skip:
            return True
        back = frame.f_back
        return back is not None and back.f_code is _THROUGH

    def find(self, depth: int = 1) -> Origin:
        """The origin of the communication call ``depth`` frames above this one."""
        frame = sys._getframe(depth + 1)
        codes, site = [], None
        while frame is not None and frame.f_code is not _ENTRY:
            if not self._skipped(frame):
                if site is None:
                    site = frame
                codes.append(frame.f_code)
            frame = frame.f_back
        if site is None:
            return Origin("<unknown>", "")
        key = tuple(codes)
        purpose = self._purposes.get(key)
        if purpose is None:
            purpose = self._purposes[key] = " < ".join(
                getattr(c, "co_qualname", c.co_name) for c in codes)
        where = (site.f_code, site.f_lineno)
        callsite = self._sites.get(where)
        if callsite is None:
            code = site.f_code
            callsite = self._sites[where] = (f"{_short_path(code.co_filename)}:{site.f_lineno} "
                                             f"in {code.co_name}")
        return Origin(callsite, purpose)


@functools.lru_cache(maxsize=4096)
def _short_path(filename: str) -> str:
    """A path relative to the current directory when it lies below it, else as is."""
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if rel.startswith("..") else rel
