"""Split root/leaf helpers for tests/idioms.py: declared wrappers, and plain ones whose module a
launch may name in ``wrappers=``."""

import trtsim


@trtsim.collective_wrapper
def send_name(dist):
    dist.broadcast("instance-0", 0)
    return "instance-0"


@trtsim.collective_wrapper
def recv_name(dist):
    return dist.broadcast(None, 0)


def plain_send_name(dist):
    dist.broadcast("instance-0", 0)
    return "instance-0"


def plain_recv_name(dist):
    return dist.broadcast(None, 0)
