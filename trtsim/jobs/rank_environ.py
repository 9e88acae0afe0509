"""Each inproc rank's own torchrun variables in one process's ``os.environ``.

A torchrun script reads its rank from the environment (``int(os.environ["RANK"])``,
``os.getenv("LOCAL_RANK")``). Inproc ranks share one process, so while a launch runs
``os.environ`` is a ``RankEnviron``: the variables a rank set with ``set_rank_vars`` are
that rank's (a context variable: every inproc rank runs in its own context), every other
variable is the process's own, read and written through. ``os.getenv`` reads ``os.environ``
at call time, so it sees the same. Processes started by a rank inherit the process's
environment, not the rank's variables (the C-level environment is the process's).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import MutableMapping
from contextvars import ContextVar
from typing import Iterator

_VARS: ContextVar = ContextVar("trtsim_rank_environ", default=None)


class RankEnviron(MutableMapping):
    """``os.environ`` with the current rank's own variables in front of the process's."""

    def __init__(self, real):
        self.real = real

    def _own(self) -> dict:
        own = _VARS.get()
        return own if own is not None else {}

    def __getitem__(self, key: str) -> str:
        own = self._own()
        return own[key] if key in own else self.real[key]

    def __setitem__(self, key: str, value: str) -> None:
        own = self._own()
        if key in own:
            own[key] = str(value)
        else:
            self.real[key] = value

    def __delitem__(self, key: str) -> None:
        own = self._own()
        if key in own:
            del own[key]
        else:
            del self.real[key]

    def __iter__(self) -> Iterator[str]:
        own = self._own()
        yield from own
        yield from (k for k in self.real if k not in own)

    def __len__(self) -> int:
        own = self._own()
        return len(own) + sum(1 for k in self.real if k not in own)

    def copy(self) -> dict:
        """A plain dict, as ``os.environ.copy()`` gives (``subprocess`` callers pass it)."""
        return dict(self)


def set_rank_vars(values: dict[str, str]) -> None:
    """This rank's variables: its own where a ``RankEnviron`` is installed (inproc), the
    process's otherwise (a process rank is the process)."""
    if isinstance(os.environ, RankEnviron):
        _VARS.set({k: str(v) for k, v in values.items()})
    else:
        os.environ.update({k: str(v) for k, v in values.items()})


@contextlib.contextmanager
def rank_environ() -> Iterator[RankEnviron]:
    """``os.environ`` is a ``RankEnviron`` inside the block; the process's mapping after."""
    real = os.environ
    proxy = RankEnviron(real)
    os.environ = proxy               # type: ignore[assignment]  # a mapping os.getenv reads
    try:
        yield proxy
    finally:
        os.environ = real
