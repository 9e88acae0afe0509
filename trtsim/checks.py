"""Validation shared by the configuration dataclasses: errors name the field and the value."""

from __future__ import annotations

import functools
import math
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
