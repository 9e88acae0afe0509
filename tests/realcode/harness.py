"""How the realcode tests launch: every launch guards the frameworks' torch.distributed calls
(``intercept=("torch",)``), has a hang guard, and names the framework's package as rank-local
module state (``rank_local=``: per-rank module globals on the inproc backend, for
``_WORLD``/``_TP``/``_PP``/``_DP`` and SGLang's runtime context).

``rank_local`` changes nothing on gloo (every rank is a process of its own), and is passed
there too, as a user would.
"""

from __future__ import annotations

import trtsim

BACKENDS = ("inproc", "gloo")
LAUNCH_TIMEOUT_S = 60.0             # a hang guard: each launch here ends in seconds


def options(backend: str, rank_local: tuple[str, ...], **kwargs) -> dict:
    """The keyword arguments of ``trtsim.launch`` (or the ``trtsim_launch`` fixture) as
    described: ``backend``, ``intercept=("torch",)``, ``rank_local``, the hang guard."""
    kwargs.setdefault("timeout", LAUNCH_TIMEOUT_S)
    return dict(backend=backend, intercept=("torch",), rank_local=rank_local, **kwargs)


def launch(prog, backend: str, rank_local: tuple[str, ...], **kwargs):
    """``trtsim.launch(prog, **options(backend, rank_local, ...))``."""
    return trtsim.launch(prog, **options(backend, rank_local, **kwargs))


def in_file(record, path: str) -> bool:
    """The call's site lies in the framework's file ``path`` (``vllm/v1/worker/dp_utils.py``)."""
    return f"/{path}:" in record.callsite
