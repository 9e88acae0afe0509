"""The rendezvous store a launch serves to its ranks: on the loopback interface by default.

torch's TCPStore server listens on every interface (``*:PORT``) whatever host name it is
given, so during a launch a client on another interface could connect and write keys into
the launch's store. So the socket is bound here -- to 127.0.0.1 unless the caller asks for
another address (a launch whose ranks run on other hosts) -- and handed to the store
(``master_listen_fd``), which owns it from then on and closes it when it goes.
"""

from __future__ import annotations

import os
import socket
from datetime import timedelta

import torch.distributed as tdist

LOOPBACK = "127.0.0.1"


def serve_store(world_size: int, timeout_s: float, host: str = LOOPBACK) -> tdist.TCPStore:
    """A TCPStore server for ``world_size`` clients, listening on ``host`` only (a free
    port; ``store.port`` says which)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.bind((host, 0))
        sock.listen(socket.SOMAXCONN)
        port = sock.getsockname()[1]
    except BaseException:
        sock.close()
        raise
    fd = sock.detach()              # the store closes it: a socket object would close it twice
    try:
        return tdist.TCPStore(host, port, world_size, True, timeout=timedelta(seconds=timeout_s),
                              wait_for_workers=False, master_listen_fd=fd)
    except BaseException:
        os.close(fd)
        raise
