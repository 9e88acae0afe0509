"""Validation shared by the configuration dataclasses: errors name the field and the value."""

from __future__ import annotations


def require_int(name: str, value, low: int = 1) -> None:
    """``ValueError("name=value must be an integer >= low")`` unless ``value`` is one."""
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name}={value!r} must be an integer >= {low}")


def require_ints(obj, *names: str, low: int = 1) -> None:
    """``require_int`` for several fields of a (frozen) config object."""
    for name in names:
        require_int(name, getattr(obj, name), low)
