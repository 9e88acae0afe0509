"""Who a failed launch is blamed on is decided from types, never from an exception's text:
what a survivor of a killed gloo peer raises (checked here on real gloo connections) is held
as a possible consequence when it came out of a real call, and nothing else is."""

import errno
import multiprocessing as mp
import os
from datetime import timedelta

import pytest
import torch
import torch.distributed as tdist

from trtsim.backends.process.culprit import is_peer_loss

pytestmark = pytest.mark.timeout(120)


def _survivor(rank: int, port: int, case: str, out) -> None:
    store = tdist.TCPStore("127.0.0.1", port, 2, rank == 0, timeout=timedelta(seconds=30))
    tdist.init_process_group("gloo", store=store, rank=rank, world_size=2,
                             timeout=timedelta(seconds=30))
    t = torch.zeros(4)
    tdist.all_reduce(t)                       # every connection is up
    if rank == 1:
        os._exit(3)                           # dies without a word
    try:
        if case == "recv":
            tdist.recv(t, 1)
        else:
            tdist.all_reduce(t)
        out.put((case, "returned", False, False))
    except BaseException as exc:  # noqa: BLE001 - what the survivor raises is the subject
        out.put((case, type(exc).__name__, is_peer_loss(exc, True), is_peer_loss(exc, False)))
    out.close()
    out.join_thread()                         # flushed before the exit that skips it
    os._exit(0)


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_survivor_of_a_killed_gloo_peer_raises_a_held_consequence():
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = []
    for case in ("recv", "all_reduce"):
        port = _free_port()
        procs += [ctx.Process(target=_survivor, args=(r, port, case, out)) for r in range(2)]
    for p in procs:
        p.start()
    got = sorted(out.get(timeout=90) for _ in range(2))
    for p in procs:
        p.join(30)
    # gloo gives a plain RuntimeError: held when raised in the call, not outside one
    assert got == [("all_reduce", "RuntimeError", True, False),
                   ("recv", "RuntimeError", True, False)]


def test_types_decide_not_messages():
    from torch.distributed import DistNetworkError, DistStoreError
    gone = ConnectionResetError(errno.ECONNRESET, "reset")
    assert is_peer_loss(gone, False) and is_peer_loss(BrokenPipeError(errno.EPIPE, "x"), False)
    assert is_peer_loss(DistNetworkError("store went away"), False)
    # a message that reads like a lost peer decides nothing
    assert not is_peer_loss(ConnectionError("Connection reset by peer"), False)
    assert not is_peer_loss(RuntimeError("Connection closed by peer"), False)
    assert not is_peer_loss(ValueError("Connection closed by peer"), True)
    assert not is_peer_loss(DistStoreError("wait timeout"), True)
    assert not is_peer_loss(KeyboardInterrupt(), True)
