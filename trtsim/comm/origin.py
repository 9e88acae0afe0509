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


def where_stopped(exc: BaseException) -> str:
    """Where an exception landed in a rank program, as reports name call sites: the
    innermost frame of the program's own code (``prog.py:12 in step``), and the library
    function it was inside when that is elsewhere (``in threading.wait``)."""
    tb, frames = exc.__traceback__, []
    while tb is not None:
        if tb.tb_frame.f_code is _ENTRY:
            frames = []
        elif not tb.tb_frame.f_code.co_filename.startswith(_COMM_DIR):   # the interrupter's
            frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    if not frames:
        return "outside the rank program"
    own = [(f, n) for f, n in frames if not f.f_code.co_filename.startswith(_LIBRARY)] or frames
    frame, line = own[-1]
    text = f"at {_short_path(frame.f_code.co_filename)}:{line} in {frame.f_code.co_name}"
    inner = frames[-1][0]
    if inner is not frame:
        module = inner.f_globals.get("__name__", "?")
        text += f" (in {module}.{inner.f_code.co_name})"
    return text


_LIBRARY = os.path.dirname(os.__file__)      # the standard library: not the program's own


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

    def _skipped(self, frame) -> bool:
        name = frame.f_code.co_filename
        if name.startswith(_COMM_DIR) or name == _LAUNCH_FILE:
            return True
        back = frame.f_back
        if back is not None and back.f_code is _THROUGH:
            return True
        if self.wrappers:
            module = frame.f_globals.get("__name__", "")
            return any(module == w or module.startswith(w + ".") for w in self.wrappers)
        return False

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
        code = site.f_code
        return Origin(f"{_short_path(code.co_filename)}:{site.f_lineno} in {code.co_name}",
                      purpose)


@functools.lru_cache(maxsize=4096)
def _short_path(filename: str) -> str:
    """A path relative to the current directory when it lies below it, else as is."""
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if rel.startswith("..") else rel
