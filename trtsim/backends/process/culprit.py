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

import errno
import signal

from ...calls.errors import RankFailed

# The errnos of a connection whose other end went away (Python's ConnectionError subclasses:
# ConnectionResetError, BrokenPipeError, ConnectionRefusedError, ConnectionAbortedError).
PEER_GONE_ERRNOS = frozenset((errno.ECONNRESET, errno.EPIPE, errno.ECONNREFUSED,
                              errno.ECONNABORTED))
CAUSE_WAIT_S = 5.0


def is_peer_loss(exc: BaseException, in_call: bool) -> bool:
    """Whether a rank's exception may be the consequence of another rank's death rather than
    a cause, decided from types, never from the message. ``in_call``: the rank raised inside a
    communication call (its ledger row still shows it blocked there).

    The TCP store's network failures are ``DistNetworkError``; Python's socket failures carry
    their errno. gloo gives no type: a peer that died mid-call surfaces as a plain
    ``RuntimeError`` out of the real call (torch 2.13, on receive, send, isend/irecv, every
    collective and barrier, checked against killed peers: no errno, no ``DistError``
    subclass); NCCL's remote failures are ``DistBackendError``. So an exception of exactly
    those types raised inside a real call is held as a possible consequence: if no rank turns
    out dead within ``CAUSE_WAIT_S`` it is reported as it is."""
    from torch.distributed import DistBackendError, DistNetworkError   # torch >= 2.2
    if isinstance(exc, DistNetworkError):
        return True
    if isinstance(exc, ConnectionError):
        return exc.errno in PEER_GONE_ERRNOS
    return in_call and (type(exc) is RuntimeError or isinstance(exc, DistBackendError))


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
