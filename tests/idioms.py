"""Idioms of real serving code, written fresh from their description (module-level, so spawned
ranks can import them). None of them labels its calls or calls ``set_iteration``: purposes come
from the call stack, iterations from ``iteration_marker="tests.idioms:Loop.step"``.

Legal idioms never report; the others report at their first divergent call.
"""

import functools

from tests import idiom_helpers


class Loop:
    """A stand-in executor loop: each ``step`` is one iteration (the iteration marker)."""

    def __init__(self, dist, body):
        self.dist, self.body = dist, body

    def step(self, it):
        return self.body(self.dist, it)

    def run(self, iterations):
        return [self.step(it) for it in range(iterations)]


# -- legal ---------------------------------------------------------------------------------
def root_branch_broadcast(dist):
    """TRT-LLM's idiom: the root broadcasts its value, the others pass None, from two lines."""
    if dist.rank == 0:
        name = "instance-0"
        dist.broadcast(name, 0)
        return name
    return dist.broadcast(None, 0)


def optional_gather(dist):
    """A gather of Optional values: None on some ranks, a list on others."""
    mine = [dist.rank] if dist.rank % 2 else None
    return dist.tp_allgather(mine)


def consensus_retry(dist):
    """A collective inside a retry loop whose exit every rank decides from the gathered votes."""
    def body(d, it):
        attempts = 0
        while True:
            attempts += 1
            votes = d.tp_allgather(attempts >= 1 + d.tp_rank)   # rank r is ready after r+1 tries
            if all(votes):
                return attempts
    return Loop(dist, body).run(2)


def log_op(fn):
    """A logging decorator on every communication method, as TorchDist has."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


class Communicator:
    """Collectives behind a decorator and a shared helper, called the same way on every rank."""

    def __init__(self, dist):
        self.dist = dist

    @log_op
    def gather(self, obj):
        return self.dist.tp_allgather(obj)


def decorated_collectives(dist):
    comm = Communicator(dist)
    return [comm.gather(dist.rank), comm.gather(None)]


def declared_wrappers(dist):
    """Root and leaf in separate helpers, declared as wrappers (``@trtsim.collective_wrapper``)."""
    return idiom_helpers.send_name(dist) if dist.rank == 0 else idiom_helpers.recv_name(dist)


def wrapper_module(dist):
    """The same split helpers, undeclared, with their module named in ``wrappers=``."""
    if dist.rank == 0:
        return idiom_helpers.plain_send_name(dist)
    return idiom_helpers.plain_recv_name(dist)


# -- reported ------------------------------------------------------------------------------
class Transceiver:
    """A sticky-role transceiver: one outcome helper serves both directions."""

    def __init__(self, dist):
        self.dist, self.ever_sent = dist, False

    def _consensus_outcome(self, lists):
        return self.dist.pp_allgather(lists)

    def check_context(self):
        if not self.ever_sent:          # the unguarded sticky skip
            return []
        return self._consensus_outcome([[], [], []])

    def check_gen(self):
        return self._consensus_outcome([[], [], []])


def one_helper_two_callers(dist):
    """PP stage 1 of DP rank 0 opens its first send session an iteration after stage 0: its
    gen outcome pairs with stage 0's ctx outcome at one sequence, through one helper line."""
    tc = Transceiver(dist)

    def body(d, it):
        if d.dp_rank == 0 and it == 1 + d.pp_rank:
            tc.ever_sent = True
        tc.check_context()
        tc.check_gen()
    return Loop(dist, body).run(4)


def late_stage_first_session(dist):
    """The same late flip with the ctx consensus alone: the skip shows in the iteration."""
    tc = Transceiver(dist)

    def body(d, it):
        if d.dp_rank == 0 and it == 1 + d.pp_rank:
            tc.ever_sent = True
        tc.check_context()
    return Loop(dist, body).run(4)


def idle_rank_early_return(dist):
    """An idle attention-DP rank returns early from a step whose rank-state gather its TP peers
    enter (each iteration another DP rank is idle)."""
    def body(d, it):
        if d.dp_rank == it % d.dp_size:
            return None
        return d.tp_allgather(d.rank)
    return Loop(dist, body).run(3)


def local_retry(dist):
    """A retry loop whose exit each rank decides alone: rank 1 retries once more."""
    for _ in range(2 if dist.tp_rank == 1 else 1):
        dist.tp_allgather(dist.rank)
    dist.tp_barrier()


def warmup_none_batch(dist):
    """TensorRT-LLM #13998: ranks whose warmup batch is None skip forward (and its
    tp_allgather) and wait in the world barrier while their peers wait in the gather."""
    batch = None if dist.tp_rank == dist.tp_size - 1 else [dist.rank]
    if batch is not None:
        dist.tp_allgather(len(batch))
    dist.barrier()


def undeclared_split_helpers(dist):
    """Root and leaf in separate helpers, undeclared: two purposes until declared."""
    if dist.rank == 0:
        return idiom_helpers.plain_send_name(dist)
    return idiom_helpers.plain_recv_name(dist)


MARKER = "tests.idioms:Loop.step"
