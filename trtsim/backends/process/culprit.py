"""Who caused a failed process launch: the rank that died, not the peers that noticed.

When a rank's process ends without a word -- killed by a signal, or exited before sending
its result (``os._exit(3)``, even ``os._exit(0)``) -- its peers' gloo connections fail at
once ("Connection closed by peer"), and their failures can reach the launcher before the dead
process's exit status does. So a failure whose exception is a lost connection is held back
until its cause shows: the launcher reports the first rank it finds dead, with the held-back
failure as its consequence. A failure of any other kind is its own cause and is reported at
once; so is a held-back one whose cause has not shown within ``CAUSE_WAIT_S`` (a peer on
another machine, or a network fault). No step waits a fixed time.
"""

from __future__ import annotations

import signal

from ...calls.errors import RankFailed

# What gloo and the TCP store say when the other end of a connection went away.
_PEER_LOSS = ("by peer", "gloo/transport", "Broken pipe", "Connection refused",
              "Connection reset")
CAUSE_WAIT_S = 5.0


def is_peer_loss(exc: BaseException) -> bool:
    """Whether a rank's exception says that a peer's connection went away: a consequence of
    another rank's death rather than a cause."""
    from torch.distributed import DistNetworkError    # torch >= 2.2 (setup.cfg: >= 2.4)
    if isinstance(exc, DistNetworkError):
        return True
    return isinstance(exc, (RuntimeError, ConnectionError)) and any(
        marker in str(exc) for marker in _PEER_LOSS)


def exit_report(name: str, rank: int, exitcode: int) -> RankFailed:
    """A rank whose process ended without a result: killed by a signal, or exited."""
    if exitcode < 0:
        try:
            what = signal.Signals(-exitcode).name
        except ValueError:
            what = f"signal {-exitcode}"
        return RankFailed(f"{name} was killed by {what}", rank=rank, signal=-exitcode)
    return RankFailed(f"{name} exited with status {exitcode} without a result", rank=rank,
                      exitcode=exitcode)


def with_consequence(cause: RankFailed, consequence: RankFailed | None) -> RankFailed:
    """``cause``, noting the failure it brought about in a peer (one line)."""
    if consequence is not None and consequence.rank != cause.rank:
        cause.details = cause.details + (f"then {consequence.summary.splitlines()[0]}",)
    return cause
