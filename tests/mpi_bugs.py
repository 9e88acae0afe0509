"""mpi4py programs with the bugs real MPI gets wrong silently, hangs on, or fails in (what it
does, beside trtsim's report: tests/test_mpi_differential.py). Four ranks, as
tests/mpi_programs.py."""

import numpy as np

from tests.mpi_protocols import mpi, tp_pp_comms

def skip_header_bcast():
    """Rank 2 skips the header broadcast: its payload broadcast pairs with the others'
    header (real MPI: silently wrong values, exit 0)."""
    MPI = mpi()
    world = MPI.COMM_WORLD
    r = world.Get_rank()
    header = np.array([7, 8, 9] if r == 0 else [0, 0, 0], dtype=np.int64)
    if r != 2:
        world.Bcast([header, MPI.INT64_T], root=0)
    payload = np.array([1, 2, 3] if r == 0 else [0, 0, 0], dtype=np.int64)
    world.Bcast([payload, MPI.INT64_T], root=0)
    world.Barrier()
    return [header.tolist(), payload.tolist()]


def count_mismatch():
    """The root broadcasts 3 int64, the others expect 2 (real MPI: MPI_ERR_TRUNCATE on some
    ranks, the others hang)."""
    MPI = mpi()
    world = MPI.COMM_WORLD
    r = world.Get_rank()
    buf = np.zeros(3 if r == 0 else 2, dtype=np.int64)
    world.Bcast([buf, MPI.INT64_T], root=0)
    return buf.tolist()


def cross_comm_deadlock():
    """Attention-DP warmup: TP rank 0s gather on their TP communicator, the others go on to
    COMM_WORLD.Barrier (real MPI: a hang)."""
    MPI = mpi()
    world = MPI.COMM_WORLD
    tp, _ = tp_pp_comms(MPI)
    if tp.Get_rank() == 0:
        tp.allgather(world.Get_rank())
    world.Barrier()
    return True


def gatherv_truncation():
    """The root's counts are smaller than what the ranks send (real MPI: MPI_ERR_TRUNCATE at
    the root)."""
    MPI = mpi()
    world = MPI.COMM_WORLD
    r, n = world.Get_rank(), world.Get_size()
    send = np.full(3, r, dtype=np.uint8)
    if r == 0:
        recv = np.zeros(2 * n, dtype=np.uint8)
        world.Gatherv([send, MPI.BYTE], [recv, [2] * n, [2 * i for i in range(n)], MPI.BYTE],
                      root=0)
        return recv.tolist()
    world.Gatherv([send, MPI.BYTE], None, root=0)
    return None
