"""Rank programs of the launch-hygiene tests (call-log contract, loopback store, a rank's
children, stopped ranks, launch ids). Module level, so the process backends can pickle them."""

import os
import signal


def _raw_ledger(dist):
    """The shared-memory ledger under this rank's transport (and the call log's wrappers)."""
    transport = getattr(dist._transport, "_transport", dist._transport)
    ledger = transport.ledger
    return type(dist._transport).__name__, getattr(ledger, "_ledger", ledger)


def count_full_reads(dist, calls):
    """Make ``calls`` all-gathers that every member agrees on; how many peer records this
    rank had to read in full (the slow path: a fast path compares match hashes only), and
    what kind of transport the rank has."""
    kind, ledger = _raw_ledger(dist)
    reads = [0]
    read_call = ledger.read_call

    def counted(*args):
        reads[0] += 1
        return read_call(*args)
    ledger.read_call = counted
    for i in range(calls):
        dist.set_iteration(i)
        dist.allgather(i, label="agree")
    return reads[0], kind


def _store_port() -> int:
    """The port of the launch's rendezvous store, as this rank's client of it knows it."""
    import torch.distributed as tdist
    store = tdist.distributed_c10d._get_default_store()
    while isinstance(store, tdist.PrefixStore):
        store = store.underlying_store
    return store.port


def _hex_ip(text: str) -> str:
    """An address of /proc/net/tcp{,6} (little-endian hex words) as text."""
    import ipaddress
    raw = bytes.fromhex(text)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words))


def store_listeners(dist):
    """Where the launch's store listens while the launch runs: (tcp|tcp6, address) of every
    listening socket on its port, read from /proc/net/tcp and /proc/net/tcp6."""
    port, found = _store_port(), []
    for table in ("tcp", "tcp6"):
        with open(f"/proc/net/{table}") as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                address, hex_port = local.rsplit(":", 1)
                if int(hex_port, 16) == port and state == "0A":      # 0A: LISTEN
                    found.append((table, _hex_ip(address)))
    dist.barrier()                  # every rank is still in the launch while rank 0 looks
    return sorted(found)


def fork_a_grandchild(dist, folder):
    """Rank 1 forks a child that ignores SIGTERM and waits for ever, and notes its pid once
    the child says (over a pipe) that it runs; then every rank returns: the launch ends well."""
    if dist.rank == 1:
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:                                    # the grandchild
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            os.write(ready_w, b"!")
            while True:
                signal.pause()
        os.close(ready_w)
        assert os.read(ready_r, 1) == b"!"
        with open(os.path.join(folder, "grandchild"), "w") as f:
            f.write(str(pid))
    dist.barrier()
    return os.getpgid(0) == os.getpid()                 # the rank leads its own group


def stop_one_rank(dist):
    """Rank 1 stops itself (SIGSTOP) between two barriers; its peer waits in the second."""
    dist.barrier()
    if dist.rank == 1:
        os.kill(os.getpid(), signal.SIGSTOP)
    dist.barrier()


def rank_of(dist):
    """This rank's number."""
    return dist.rank
