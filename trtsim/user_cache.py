"""The user's cache folder for what trtsim keeps between runs without being asked where.

``$XDG_CACHE_HOME/trtsim/<what>`` (default ``~/.cache/trtsim/<what>``): per user, so no other
user can plant a link in it (the files trtsim writes there still go through ``safe_write``).
"""

from __future__ import annotations

import os


def user_cache(what: str) -> str:
    """The folder ``trtsim/<what>`` under the user's cache folder (not created here)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "trtsim", what)
