"""Validation shared by the configuration dataclasses: errors name the field and the value."""

from __future__ import annotations

import functools
import itertools
import math
import re
import typing


def require_int(name: str, value, low: int = 1) -> None:
    """``ValueError("name=value must be an integer >= low")`` unless ``value`` is one."""
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name}={value!r} must be an integer >= {low}")


def require_ints(obj, *names: str, low: int = 1) -> None:
    """``require_int`` for several fields of a (frozen) config object."""
    for name in names:
        require_int(name, getattr(obj, name), low)


@functools.lru_cache(maxsize=None)
def field_types(cls) -> dict:
    """The resolved annotations of a dataclass's fields (string annotations evaluated)."""
    return typing.get_type_hints(cls)


def choices(cls, name: str) -> tuple:
    """The values a ``Literal``-typed field admits: the one list of its choices."""
    return typing.get_args(field_types(cls)[name])


def require_choices(obj) -> None:
    """``ValueError("name='x'; expected one of a, b")`` for a Literal-typed field of ``obj``
    holding a value its annotation does not list."""
    for name, hint in field_types(type(obj)).items():
        if typing.get_origin(hint) is typing.Literal:
            value = getattr(obj, name)
            if value not in typing.get_args(hint):
                raise ValueError(f"{name}={value!r}; expected one of "
                                 f"{', '.join(map(str, typing.get_args(hint)))}")


# Input limits, in one place. Sizes past them are absurd for this simulator (everything of an
# inproc launch shares one process) and would only exhaust memory or the clock: they are
# refused where the input is read, before anything runs, with the limit named.
MAX_RANKS = 16_384                 # ranks of one launch, or GPUs of one perf instance
MAX_REQUESTS = 1_000_000           # requests of one workload (prompts x rounds for perf)
MAX_REQUEST_TOKENS = 10_000_000    # tokens of one request (prompt or output), perf scenarios
MAX_TIMEOUT_S = 30 * 86_400         # a launch's timeout: a month (seconds)
MAX_KV_POOL_BYTES = 16 * 2 ** 30   # the KV-cache pools of every rank of a run, together
MAX_SCENARIO_BYTES = 4 * 2 ** 20   # a scenario file


def require_at_most(name: str, value: int, limit: int, unit: str) -> None:
    """``ValueError("name=value: more than the limit of N unit")`` when value > limit."""
    if value > limit:
        raise ValueError(f"{name}={value!r}: more than the limit of {limit:,} {unit}")


def require_seconds(name: str, value) -> None:
    """A finite, positive number of seconds, at most ``MAX_TIMEOUT_S``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 \
            or not math.isfinite(value):
        raise ValueError(f"{name}={value!r} must be a finite number of seconds > 0")
    require_at_most(name, value, MAX_TIMEOUT_S, "seconds")


# Limits on the files a post-mortem reads (dumps, call logs, replays): checked before anything
# is made from them, so a tiny hostile file cannot ask for unbounded memory or time.
MAX_INPUT_BYTES = 512 * 2 ** 20    # one dump, call log or replay file
MAX_ENTRIES = 1_000_000            # entries of one dump (TORCH_FR_BUFFER_SIZE is ~2,000)
MAX_FILES = 100_000                # files of one job
MAX_LINE = 10_000_000              # a recorded source line number
MAX_DEPTH = 32                     # nesting of containers in an input (a dump nests ~5 deep)
MAX_EXCERPT = 200                  # characters of input an error message quotes
MAX_ERROR_LINE = 2_000             # characters of one error message, all told
MAX_SCENARIO_NODES = 4_000_000     # values of a scenario once its YAML aliases are expanded
                                   # (more than a file of MAX_SCENARIO_BYTES holds without any)


def excerpt(value, limit: int = MAX_EXCERPT) -> str:
    """A repr-like text of ``value`` of at most ``limit`` characters, made without ever
    building the whole repr: a structure that shares references (a billion laughs) or nests
    deep costs only the characters shown."""
    out: list[str] = []
    size = 0
    stack: list = [value]
    while stack and size <= limit:
        item = stack.pop()
        if isinstance(item, _Text):
            piece = item.text
        elif isinstance(item, (list, tuple, dict, set, frozenset)):
            if len(stack) > limit:              # deeper than can be shown
                piece = "..."
            else:
                opening, closing = _BRACKETS[type(item).__mro__[-2] if type(item) not in
                                             _BRACKETS else type(item)]
                parts = iter(item.items()) if isinstance(item, dict) else iter(item)
                stack.append(_Text(",)" if type(item) is tuple and len(item) == 1 else closing))
                stack.append(_Items(parts, isinstance(item, dict)))
                piece = opening
        elif isinstance(item, _Items):
            nxt = next(item.parts, _END)
            if nxt is _END:
                continue
            stack.append(item)                  # the rest, after this element
            stack += [nxt[1], _Text(": "), nxt[0]] if item.mapping else [nxt]
            if item.started:
                stack.append(_Text(", "))
            item.started = True
            continue
        elif isinstance(item, str):
            piece = repr(item[:limit + 1])
        elif isinstance(item, (bytes, bytearray)):
            piece = repr(bytes(item[:limit + 1]))
        elif isinstance(item, (int, float, bool)) or item is None:
            piece = repr(item) if not isinstance(item, int) or abs(item) < 10 ** 40 else \
                f"<an integer of {item.bit_length()} bits>"
        else:
            piece = f"<{type(item).__name__}>"
        out.append(piece)
        size += len(piece)
    text = "".join(out)
    return text if len(text) <= limit and not stack else text[:limit - 3] + "..."


class _Text:
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


class _Items:
    __slots__ = ("parts", "mapping", "started")

    def __init__(self, parts, mapping: bool):
        self.parts, self.mapping, self.started = parts, mapping, False


_END = object()
_BRACKETS = {list: ("[", "]"), tuple: ("(", ")"), dict: ("{", "}"), set: ("{", "}"),
             frozenset: ("frozenset({", "})"), object: ("<", ">")}


def depth_within(value, limit: int = MAX_DEPTH) -> bool:
    """Whether the containers of ``value`` nest at most ``limit`` deep, found without
    recursion (a shared container is walked again only when reached deeper, so at most
    ``limit`` times)."""
    seen: dict[int, int] = {}
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, (list, tuple, dict, set, frozenset)) or \
                seen.get(id(item), 0) >= depth:
            continue
        if depth > limit:
            return False
        seen[id(item)] = depth
        children = item.items() if isinstance(item, dict) else item
        for child in children:
            stack.append((child, depth + 1))
    return True


def expanded_size(value, limit: int) -> int:
    """How many values ``value`` holds once every shared reference is counted each time it
    is used (a YAML alias expanded), counted with each container visited once; stops past
    ``limit``. Call it on values whose depth ``depth_within`` bounded (it recurses)."""
    sizes: dict[int, int] = {}

    def size(item) -> int:
        if not isinstance(item, (list, tuple, dict)):
            return 1
        known = sizes.get(id(item))
        if known is None:
            children = (v for kv in item.items() for v in kv) if isinstance(item, dict) \
                else item
            known = 1
            for child in children:
                known += size(child)
                if known > limit:
                    break
            sizes[id(item)] = known
        return known
    return size(value)


_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKET_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(_BRACKET_STEP)))


def json_depth_within(data: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether JSON text nests its arrays and objects at most ``limit`` deep (its strings
    skipped), found in one pass that does not recurse: ``json.loads`` does."""
    brackets = _JSON_STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    if len(brackets) <= limit:
        return True
    return max(itertools.accumulate(map(_BRACKET_STEP.__getitem__, brackets))) <= limit

# Call logs (``trtsim analyze``): a log holds at most calls.call_log_format.CALL_LOG_SIZE calls of a few
# hundred bytes each; a file far past that is no call log trtsim wrote. A log's world size and
# rank are checked against MAX_RANKS before anything is sized by them.
MAX_CALL_LOG_BYTES = 64 * 2 ** 20  # one call log file
MAX_LOG_FILES = MAX_FILES          # call log files of one analyze (every launch in its folders)
