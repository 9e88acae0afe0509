"""Binds mpi4py's names at import, as TensorRT-LLM's modules do; imported for the first time
inside a launched rank by tests/test_scoped_install.py."""

from mpi4py import MPI
from mpi4py.MPI import COMM_WORLD, SUM


def world_sum(value):
    return COMM_WORLD.allreduce(value, op=SUM)


def world_size() -> int:
    return MPI.COMM_WORLD.Get_size()
