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

``origin_of_frames`` applies the same rule to a stack recorded elsewhere (a Flight Recorder
entry's Python frames, innermost first), where torch.distributed's own frames are the
communication layer too.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import os
import sys
import traceback
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Callable, Iterable

from ..calls.purpose_paths import SEP

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LAUNCH_FILE = os.path.join(_PACKAGE_DIR, "launching.py")
# trtsim's plumbing: the wings that carry a call (the call vocabulary, the guard,
# Distributed, interception, the backends), never program code above them such as trtsim's
# own executor and transceiver. Their frames are never a call site.
_PLUMBING = ("calls", "guard", "comm", "intercept", "backends")
_PLUMBING_DIRS = tuple(os.path.join(_PACKAGE_DIR, wing) + os.sep for wing in _PLUMBING)
# Path pieces of frames that belong to the communication layer (any install path, recorded
# frames too): trtsim's plumbing, and torch.distributed's (functional collectives, device
# meshes, c10d's helpers reach trtsim's backend through them).
_LAYER_PARTS = ("/torch/distributed/",) + tuple(f"/trtsim/{wing}/" for wing in _PLUMBING)
# torch itself is no call site either: its modules, autograd and dispatch frames lie between
# the user's line and the collective (``loss.backward()`` reaches a backward collective
# through torch/autograd, a module's forward through torch/nn): the user's frame is the site.
_GENERATED = "<eval_with_key>"       # code torch.fx generates (a compiled graph's)
_TORCH_SPEC = importlib.util.find_spec("torch")     # found, not imported: origins stay light
_TORCH_DIR = os.path.dirname(os.path.abspath(_TORCH_SPEC.origin)) + os.sep \
    if _TORCH_SPEC is not None and _TORCH_SPEC.origin else os.sep + "nonexistent" + os.sep


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
    tb = exc.__traceback__
    frames: list[tuple[FrameType, int]] = []     # (frame, line), outermost first
    while tb is not None:
        if tb.tb_frame.f_code is _ENTRY:
            frames = []
        elif not tb.tb_frame.f_code.co_filename.startswith(_PLUMBING_DIRS):  # the interrupter's
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


_UNKNOWN = "<unknown>"       # the site of a call with no user frame

# Frames whose caller may change while they live (generators, coroutines: a suspended frame
# is resumed from wherever the next ``next()`` or ``send()`` is called).
_RESUMABLE = (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ITERABLE_COROUTINE
              | inspect.CO_ASYNC_GENERATOR)


class _Known:
    """A user frame of the last walk whose chain outward cannot change while it runs (no
    resumable frame from it to the entry): the codes counted from it outward and their
    purpose string (made on first use). ``pos``: how many user frames lie outward of it."""

    __slots__ = ("frame", "codes", "purpose", "pos")

    def __init__(self, frame, codes: tuple, pos: int):
        self.frame, self.codes, self.purpose, self.pos = frame, codes, None, pos


@dataclass
class OriginFinder:
    """Finds the origin of calls for one rank; ``wrappers`` are module names (prefixes)
    whose frames are skipped. Keeps its own cache of purpose strings.

    Repeated calls from one loop walk only the frames entered since the last call: the user
    frames of the last walk are remembered (``_known``, innermost last), and the walk stops
    at the first of them it meets again -- the same frame object, still running, so the same
    chain outward (frames whose caller can change are never remembered). So a call site
    40 frames deep costs the frames above its loop, not 40. The frames remembered are those
    of this rank's last call only (their locals live until its next call)."""

    wrappers: tuple[str, ...] = ()
    # What an intercepted API adds to a call site, asked on every call: a short text (torch:
    # the module whose forward made a backward collective), or None. A call with no user
    # frame (a thread of the library's own) is named by that text alone.
    annotate: Callable[[], str | None] | None = None
    _purposes: dict = field(default_factory=dict, repr=False)
    # The caches are keyed by id(): hashing a code object hashes its bytecode, on every call.
    # Each entry keeps its code objects and is used only while they are the same objects.
    _skip_code: dict = field(default_factory=dict, repr=False)   # id(code) -> (code, skip, gen)
    _sites: dict = field(default_factory=dict, repr=False)       # (id, lasti) -> (code, site)
    _origins: dict = field(default_factory=dict, repr=False)     # (site, purpose) -> Origin
    _known: list = field(default_factory=list, repr=False)       # _Known, outermost first
    _by_frame: dict = field(default_factory=dict, repr=False)    # id(frame) -> _Known

    def _file_skipped(self, frame) -> tuple:
        """(code, whether frames of this code are trtsim's or a declared wrapper's, whether
        its frames are resumable)."""
        code = frame.f_code
        name = code.co_filename
        module = frame.f_globals.get("__name__", "")
        path = name.replace("\\", "/")
        hit = self._skip_code[id(code)] = (code, (
            name.startswith(_PLUMBING_DIRS) or name == _LAUNCH_FILE or name.startswith(_TORCH_DIR)
            or name.startswith(_GENERATED)
            or any(part in path for part in _LAYER_PARTS)
            or any(module == w or module.startswith(w + ".") for w in self.wrappers)),
            bool(code.co_flags & _RESUMABLE))
        return hit

    def find(self, depth: int = 1) -> Origin:
        """The origin of the communication call ``depth`` frames above this one, with what
        ``annotate`` adds to its site."""
        frame: FrameType | None = sys._getframe(depth + 1)
        mine, known, by_frame = [], self._skip_code, self._by_frame
        base, steady = None, 0          # mine[steady:] have no resumable frame outward
        # The hot loop of every guarded call: one or two dict lookups per frame, no call.
        while frame is not None:
            code = frame.f_code
            if code is _ENTRY:
                break
            seen = by_frame.get(id(frame))
            if seen is not None and seen.frame is frame:
                base = seen
                break
            hit = known.get(id(code))
            if hit is None or hit[0] is not code:
                hit = self._file_skipped(frame)
            back = frame.f_back
            if not hit[1] and (back is None or back.f_code is not _THROUGH):
                mine.append(frame)
            if hit[2]:
                steady = len(mine)
            frame = back
        outer = base.codes if base is not None else ()
        if mine or len(self._known) != (base.pos + 1 if base is not None else 0):
            self._remember(mine, steady, base, outer)   # else: nothing to forget or add
        if mine:
            site, codes = mine[0], tuple(f.f_code for f in mine) + outer
            purpose = self._purpose(codes)
        elif base is not None:
            site, codes = base.frame, outer
            if base.purpose is None:
                base.purpose = self._purpose(codes)
            purpose = base.purpose
        else:
            return self._annotated(Origin(_UNKNOWN, ""))
        code = site.f_code
        # keyed by the instruction, not the line: a frame's line is looked up in its code's
        # line table on every read, the instruction offset is stored
        where = (id(code), site.f_lasti)
        place = self._sites.get(where)
        if place is None or place[0] is not code:
            place = self._sites[where] = (code, f"{_short_path(code.co_filename)}:"
                                                f"{site.f_lineno} in {code.co_name}")
        origin = self._origins.get((place[1], purpose))
        if origin is None:
            origin = self._origins[(place[1], purpose)] = Origin(place[1], purpose)
        return origin if self.annotate is None else self._annotated(origin)

    def _annotated(self, origin: Origin) -> Origin:
        note = self.annotate() if self.annotate is not None else None
        if not note:
            return origin
        if origin.callsite == _UNKNOWN:
            return Origin(note, origin.purpose)
        return Origin(f"{origin.callsite}, {note}", origin.purpose)

    def release(self) -> None:
        """Forget the remembered frames (a launch's end: they hold their locals, and through
        the rank's communicator, which holds this finder, they would form a cycle that only
        a full collection frees)."""
        self._known.clear()
        self._by_frame.clear()

    def _purpose(self, codes: tuple) -> str:
        key = tuple(map(id, codes))
        hit = self._purposes.get(key)
        if hit is None or hit[0] != codes:       # tuple equality: identity first, cheap
            hit = self._purposes[key] = (codes, SEP.join(
                getattr(c, "co_qualname", c.co_name) for c in codes))
        return hit[1]

    def _remember(self, mine: list, steady: int, base: "_Known | None", outer: tuple) -> None:
        """Keep the user frames of this walk that can be met again (``mine[steady:]``),
        after ``base``; forget those of the last walk that lay inward of ``base`` (they
        have returned: the walk came up through other frames)."""
        stack, by_frame = self._known, self._by_frame
        keep = base.pos + 1 if base is not None else 0
        while len(stack) > keep:
            del by_frame[id(stack.pop().frame)]
        codes = outer
        for frame in reversed(mine[steady:]):
            codes = (frame.f_code,) + codes
            entry = _Known(frame, codes, len(stack))
            stack.append(entry)
            by_frame[id(frame)] = entry


_ORIGIN_FILE, _LAUNCH_TAIL = "/trtsim/comm/origin.py", "/trtsim/launching.py"


def origin_of_frames(frames: Iterable[tuple[str, int, str]]) -> Origin:
    """The origin of a call recorded as ``(filename, line, function)`` frames, innermost
    first: the guard's rule (``OriginFinder``) with torch.distributed's frames and trtsim's
    communication layer skipped, and so is a function ``@collective_wrapper`` declares;
    the walk ends at ``call_rank_program`` when the stack has it. Recorded frames name
    functions without their class, so the purpose key has plain names."""
    paths = [(f, line, name, f.replace("\\", "/")) for f, line, name in frames]
    names, site = [], None
    for i, (filename, line, name, path) in enumerate(paths):
        if name == _ENTRY.co_name and path.endswith(_ORIGIN_FILE):
            break
        if any(part in path for part in _LAYER_PARTS) or path.endswith(_LAUNCH_TAIL):
            continue
        outer = paths[i + 1] if i + 1 < len(paths) else None
        if outer is not None and outer[2] == _THROUGH.co_name and outer[3].endswith(_ORIGIN_FILE):
            continue                       # a declared wrapper: its caller is the origin
        if site is None:
            site = (filename, line, name)
        names.append(name)
    if site is None:
        return Origin("<unknown>", "")
    return Origin(f"{_short_path(site[0])}:{site[1]} in {site[2]}", SEP.join(names))


def short_site(callsite: str) -> str:
    """A call site recorded elsewhere (``file:line in function``) with its file named as a
    call made here would name it (relative to this directory when below it)."""
    file, sep, rest = callsite.rpartition(":")
    if not sep or not os.path.isabs(file):
        return callsite
    return f"{_short_path(file)}:{rest}"


@functools.lru_cache(maxsize=4096)
def _short_path(filename: str) -> str:
    """A path relative to the current directory when it lies below it, else as is."""
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if rel.startswith("..") else rel
