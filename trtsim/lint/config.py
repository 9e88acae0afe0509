"""The lint's configuration: ``[tool.trtsim.lint]`` of the analysed project's pyproject.toml.

    [tool.trtsim.lint]
    collectives = ["sync_all", "Comm.exchange"]   # more collective names (or receiver.name)
    uniform = ["dp_padding_mode"]                 # names whose values the project agrees
                                                  # elsewhere (a consensus outside the paths)
    attention-dp = false                          # the TP group never spans DP ranks here

A ``uniform`` name (an attribute, variable or function) is read as uniform wherever it
appears: the declaration of code the lint cannot see, as a suppression is of a gate it can.

The file is the first ``pyproject.toml`` found from the first path upward. A key the lint does
not know, or a value of the wrong type, is bad input naming the file, the key and the value.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..checks import excerpt

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")
MAX_NAMES = 1_000
MAX_PYPROJECT_BYTES = 2 ** 20


@dataclass(frozen=True)
class LintConfig:
    """Extra collective names, whether attention DP can put DP ranks in a TP group (None:
    decided by the code - any mention of attention DP), and names declared uniform."""

    collectives: frozenset = frozenset()
    attention_dp: bool | None = None
    uniform: frozenset = frozenset()
    source: str = ""

    def __post_init__(self) -> None:
        for key in ("collectives", "uniform"):
            names = getattr(self, key)
            bad = [n for n in names if not isinstance(n, str) or not _NAME.match(n)]
            if bad:
                raise ValueError(f"{self.source or 'config'}: {key}={excerpt(bad)}: each must "
                                 "be a name (collectives: or receiver.name)")
            if len(names) > MAX_NAMES:
                raise ValueError(f"{self.source}: {key}: more than {MAX_NAMES} names")
        if self.attention_dp not in (None, True, False):
            raise ValueError(f"{self.source}: attention-dp={excerpt(self.attention_dp)} must "
                             "be true or false")


def find_pyproject(paths: list[str]) -> str | None:
    """The first pyproject.toml at or above the first path."""
    if not paths:
        return None
    folder = os.path.abspath(paths[0])
    if not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    while True:
        candidate = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def load_config(paths: list[str]) -> LintConfig:
    """The configuration for these paths (defaults when no pyproject.toml has the table)."""
    found = find_pyproject(paths)
    if found is None:
        return LintConfig()
    try:
        import tomllib
    except ImportError:                          # Python 3.10: the backport, if present
        try:
            import tomli as tomllib
        except ImportError:
            return LintConfig()
    try:
        if os.path.getsize(found) > MAX_PYPROJECT_BYTES:
            raise ValueError(f"{found}: larger than {MAX_PYPROJECT_BYTES:,} bytes")
        with open(found, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{found}: not readable TOML ({exc})") from None
    table = data.get("tool", {}).get("trtsim", {}).get("lint")
    if table is None:
        return LintConfig(source=found)
    if not isinstance(table, dict):
        raise ValueError(f"{found}: [tool.trtsim.lint] must be a table")
    unknown = sorted(set(table) - {"collectives", "uniform", "attention-dp"})
    if unknown:
        raise ValueError(f"{found}: [tool.trtsim.lint] {unknown[0]}: unknown key; expected "
                         "collectives, uniform, attention-dp")
    lists = {}
    for key in ("collectives", "uniform"):
        names = table.get(key, [])
        if not isinstance(names, list):
            raise ValueError(f"{found}: {key}={excerpt(names)} must be a list of names")
        lists[key] = frozenset(names)
    return LintConfig(lists["collectives"], table.get("attention-dp"), lists["uniform"],
                      found)
