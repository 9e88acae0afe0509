"""TensorRT-LLM's communicator protocols over mpi4py, written fresh from its description: the
chunked broadcast of ``safe_broadcast`` and the gather with counts and displacements of
``safe_gather``, and its TP/PP communicators (``MPIDist``: ``group.Incl`` then
``Create_group``) for a 4-rank tp=2 x pp=2 mapping."""

import math
import pickle

import numpy as np

TP = 2


def mpi():
    from mpi4py import MPI
    return MPI


def tp_pp_groups(rank: int, size: int):
    """TensorRT-LLM's Mapping of (tp=2, pp=size/2): this rank's TP and PP group."""
    tp_rank, pp_rank = rank % TP, rank // TP
    return [pp_rank * TP + i for i in range(TP)], [tp_rank + TP * j for j in range(size // TP)]


def tp_pp_comms(MPI):
    """TP and PP communicators as MPIDist makes them: group.Incl, then Create_group."""
    world = MPI.COMM_WORLD
    tp_group, pp_group = tp_pp_groups(world.Get_rank(), world.Get_size())
    return (world.Create_group(world.group.Incl(tp_group)),
            world.Create_group(world.group.Incl(pp_group)))


def chunked_broadcast(comm, obj, root=0, chunk=64):
    """safe_broadcast's protocol: an int64 header [ok, total, chunks], then byte chunks from
    a read-only memoryview on the root into a bytearray's memoryview elsewhere."""
    MPI = mpi()
    rank = comm.Get_rank()
    header = np.zeros(3, dtype=np.int64)
    if rank == root:
        blob = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        header[:] = (1, len(blob), math.ceil(len(blob) / chunk))
    comm.Bcast([header, MPI.INT64_T], root=root)
    total, rounds = int(header[1]), int(header[2])
    view = memoryview(blob) if rank == root else memoryview(bytearray(total))
    for i in range(rounds):
        part = view[i * chunk:min((i + 1) * chunk, total)]
        comm.Bcast([part, MPI.BYTE], root=root)
    return obj if rank == root else pickle.loads(view.obj)


def gather_with_displacements(comm, obj, root=0, chunk=0):
    """safe_gather's protocol: lengths by a buffer Allgather of int64, then Gatherv of bytes
    with counts and displacements (``chunk`` > 0: in rounds of at most that many bytes per
    rank, zero-length parts included, as its older form did)."""
    MPI = mpi()
    rank, size = comm.Get_rank(), comm.Get_size()
    payload = np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), dtype=np.uint8)
    lengths = np.empty(size, dtype=np.int64)
    comm.Allgather([np.array([payload.size], dtype=np.int64), MPI.INT64_T],
                   [lengths, MPI.INT64_T])
    displs = np.concatenate([[0], np.cumsum(lengths[:-1])]).astype(np.int64)
    recv = np.empty(int(lengths.sum()), dtype=np.uint8) if rank == root else None
    step = chunk or int(lengths.max())
    for r in range(math.ceil(int(lengths.max()) / step)):
        offs = r * step
        counts = np.minimum(np.maximum(lengths - offs, 0), step).astype(np.int32)
        where = (displs + np.minimum(lengths, offs)).astype(np.int32)
        part = payload[min(offs, payload.size):min(offs, payload.size) + int(counts[rank])]
        if rank == root:
            comm.Gatherv([part, MPI.BYTE], [recv, counts, where, MPI.BYTE], root=root)
        else:
            comm.Gatherv([part, MPI.BYTE], None, root=root)
    if rank != root:
        return None
    return [pickle.loads(recv[d:d + n].tobytes()) for d, n in zip(displs, lengths)]
