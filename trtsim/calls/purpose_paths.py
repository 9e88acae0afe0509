"""Where the purposes of a mismatched call part: the frames each rank came through that the
others did not.

A purpose is the chain of functions that reached a collective, innermost first
(``GroupCoordinator.all_reduce < dp_gather < step``). Two ranks that enter one coordinator
method from different places show the same call site, so a report that gave only the site
would hide the divergence; this gives, per rank, the path from the last frame every chain
shares at its outer end to the first one they share at the inner end, outermost first.
"""

from __future__ import annotations

SEP = " < "


def frames_of(purpose: str) -> list[str]:
    """A purpose's function names, innermost first (none for an empty purpose)."""
    return purpose.split(SEP) if purpose else []


def purpose_of(names) -> str:
    """The purpose made of function names, innermost first (``frames_of``'s inverse)."""
    return SEP.join(names)


def _shared(chains: list[list[str]]) -> int:
    """How many leading frames every chain has in common."""
    n = 0
    for frames in zip(*chains):
        if len(set(frames)) != 1:
            break
        n += 1
    return n


def distinct_paths(purposes: dict[int, str]) -> dict[int, str]:
    """Rank -> ``"outer -> ... -> inner"`` for the frames that set its purpose apart; empty
    when the purposes are all equal. Each path starts at the frame where the chains part (the
    innermost of the outer frames they share, when they share one) and leaves out the inner
    frames they share."""
    chains = {r: frames_of(p) for r, p in purposes.items()}
    if len({tuple(c) for c in chains.values()}) < 2:
        return {}
    inner = _shared(list(chains.values()))
    rest = [c[inner:] for c in chains.values()]
    outer = _shared([c[::-1] for c in rest])
    paths = {}
    for r, c in chains.items():
        own = c[inner:len(c) - outer]
        anchor = c[len(c) - outer:][:1]          # where the chains part
        path = anchor + own[::-1]
        paths[r] = " -> ".join(path) if path else "(no frames of its own)"
    return paths
