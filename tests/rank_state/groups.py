"""Module globals set once per process, then read everywhere (the framework idiom)."""

_WORLD = None
_groups: dict = {}
_history: list = []


def init(rank: int, size: int) -> None:
    global _WORLD
    if _WORLD is not None:
        raise RuntimeError(f"rank {rank}: already initialised by rank {_WORLD}")
    _WORLD = rank
    _groups["tp"] = (rank // 2, size)


def world():
    return _WORLD


def record(x) -> None:
    _history.append(x)


def history() -> list:
    return list(_history)
