"""mpi4py programs in the shapes TensorRT-LLM's communicator uses, written fresh: each runs
unchanged on the real library under mpirun (``python tests/mpi_programs.py NAME`` prints every
rank's result as a JSON line; ``all``: every legal one) and on trtsim's stand-in
(``launch(prog, tp=2, pp=2, intercept=("mpi",))``). Four ranks; TP groups {0, 1}, {2, 3}, PP
groups {0, 2}, {1, 3}. LEGAL programs return the same value on every backend; the buggy ones
are in tests/mpi_bugs.py."""

import json
import os
import pickle
import sys

import numpy as np

if __name__ == "__main__":          # run as a script by mpirun: the repository's tests package
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.mpi_protocols import TP, chunked_broadcast, gather_with_displacements, mpi, \
    tp_pp_comms  # noqa: E402


# -- legal programs -----------------------------------------------------------------------------
def broadcast_protocol():
    MPI = mpi()
    world = MPI.COMM_WORLD
    tp, _ = tp_pp_comms(MPI)
    big = {"cfg": list(range(50)), "name": "x" * 100} if world.Get_rank() == 0 else None
    got = chunked_broadcast(world, big)
    small = chunked_broadcast(tp, f"tp-root-{world.Get_rank()}", chunk=4)
    return [got["cfg"][-1], len(got["name"]), small]


def gather_protocol():
    MPI = mpi()
    world = MPI.COMM_WORLD
    r = world.Get_rank()
    tp, pp = tp_pp_comms(MPI)
    one_shot = gather_with_displacements(world, {"rank": r, "pad": [r] * (r * 7)})
    rounds = gather_with_displacements(world, "y" * (r * 13), chunk=8)
    on_pp = gather_with_displacements(pp, (r, None), root=1)
    return [one_shot, rounds, on_pp]


def split_tp_pp():
    MPI = mpi()
    world = MPI.COMM_WORLD
    r = world.Get_rank()
    tp, pp = tp_pp_comms(MPI)
    by_split = world.Split(color=r // TP, key=-r)
    ints = np.empty(tp.Get_size() * 2, dtype=np.int64)
    tp.Allgather([np.array([r, 10 * r], dtype=np.int64), MPI.INT64_T], [ints, MPI.INT64_T])
    return [tp.Get_rank(), tp.Get_size(), pp.Get_rank(), pp.Get_size(), tp.allgather(r),
            pp.bcast(f"pp-{r}", 0), pp.gather(r, root=0), ints.tolist(),
            by_split.Get_rank(), by_split.allreduce(r, MPI.MAX)]


def probe_loop():
    """Rank 0 sends each peer a buffer whose size the peer learns by probing, then an object
    it probes for with a blocking Probe; the peers answer with their sizes."""
    MPI = mpi()
    world = MPI.COMM_WORLD
    r, n = world.Get_rank(), world.Get_size()
    if r == 0:
        for peer in range(1, n):
            world.Send([np.arange(peer * 3, dtype=np.int32), MPI.INT], dest=peer, tag=11)
            world.send({"peer": peer}, dest=peer, tag=12)
        return sorted(world.recv(source=p, tag=13) for p in range(1, n))
    status = MPI.Status()
    while not world.Iprobe(source=0, tag=11, status=status):
        pass
    count = status.Get_count(MPI.INT)
    buf = np.empty(count, dtype=np.int32)
    world.Recv([buf, MPI.INT], source=status.Get_source(), tag=status.Get_tag())
    world.Probe(source=0, tag=12, status=status)
    obj = world.recv(source=0, tag=12)
    world.send((r, count, int(buf.sum()), obj["peer"]), dest=0, tag=13)
    return [status.Get_source(), status.Get_tag(), count, buf.tolist()]


def probe_keeps_the_message():
    """A probe does not take the message: a second probe still sees it, the receive gets it,
    and the next message of the channel comes after it."""
    MPI = mpi()
    world = MPI.COMM_WORLD
    r = world.Get_rank()
    if r == 0:
        world.send("first", dest=1, tag=2)
        world.send("second", dest=1, tag=2)
    if r != 1:
        return None
    status = MPI.Status()
    world.Probe(source=0, tag=2, status=status)
    again = world.Iprobe(source=0, tag=2)
    return [status.Get_source(), status.Get_tag(), status.count, again,
            world.recv(source=0, tag=2), world.recv(source=0, tag=2)]


def vector_collectives():
    MPI = mpi()
    world = MPI.COMM_WORLD
    r, n = world.Get_rank(), world.Get_size()
    counts = [i + 1 for i in range(n)]
    allv = np.zeros(sum(counts), dtype=np.int64)
    world.Allgatherv([np.full(r + 1, r, dtype=np.int64), MPI.INT64_T], [allv, counts, MPI.INT64_T])
    part = np.zeros(r + 1, dtype=np.float64)
    world.Scatterv([np.arange(sum(counts), dtype=np.float64), counts, MPI.DOUBLE] if r == 0
                   else None, [part, MPI.DOUBLE], root=0)
    a2a = np.zeros(n, dtype=np.int32)
    world.Alltoallv([np.arange(n, dtype=np.int32) + 100 * r, [1] * n, MPI.INT32_T],
                    [a2a, ([1] * n, list(range(n))), MPI.INT32_T])
    rs = np.zeros(r + 1, dtype=np.int64)
    world.Reduce_scatter(np.arange(sum(counts), dtype=np.int64) + r, rs, counts, MPI.SUM)
    block = np.zeros(2, dtype=np.int64)
    world.Reduce_scatter_block(np.arange(2 * n, dtype=np.int64) * (r + 1), block, MPI.MAX)
    acc = np.array([r + 1, 2 * r], dtype=np.int64)
    world.Allreduce(MPI.IN_PLACE, [acc, MPI.INT64_T], MPI.SUM)
    red = np.zeros(1, dtype=np.int32) if r == 0 else None
    world.Reduce(np.array([r * r], dtype=np.int32), red, op=MPI.SUM, root=0)
    sc = np.zeros(2, dtype=np.uint8)
    world.Scatter(np.arange(2 * n, dtype=np.uint8) if r == 0 else None, sc, root=0)
    a2 = np.zeros(n, dtype=np.int64)
    world.Alltoall(np.arange(n, dtype=np.int64) * (r + 1), a2)
    g = np.zeros(n, dtype=np.bool_) if r == 1 else None
    world.Gather([np.array([r % 2 == 0]), MPI.BOOL], g, root=1)
    flags = np.zeros(n, dtype=np.uint8)
    world.Allgather([bytes([r + 65]), MPI.CHAR], [flags, MPI.BYTE])
    return [allv.tolist(), part.tolist(), a2a.tolist(), rs.tolist(), block.tolist(),
            acc.tolist(), None if red is None else red.tolist(), sc.tolist(), a2.tolist(),
            None if g is None else g.tolist(), bytes(flags).decode()]


def requests_and_status():
    MPI = mpi()
    world = MPI.COMM_WORLD
    r, n = world.Get_rank(), world.Get_size()
    right, left = (r + 1) % n, (r - 1) % n
    sends = [world.isend(f"{r}->{right}#{i}", dest=right, tag=30 + i) for i in range(3)]
    recvs = [world.irecv(source=left, tag=30 + i) for i in range(3)]
    got = MPI.Request.waitall(recvs)
    MPI.Request.waitall(sends)
    out = np.full(2, r, dtype=np.int64)
    into = np.zeros(2, dtype=np.int64)
    reqs = [world.Isend([out, MPI.INT64_T], dest=right, tag=40),
            world.Irecv([into, MPI.INT64_T], source=left, tag=40)]
    statuses = [MPI.Status(), MPI.Status()]
    MPI.Request.Waitall(reqs, statuses)
    late = world.irecv(source=left, tag=50)
    world.isend(r * 100, dest=right, tag=50).wait()
    while not late.Test():
        pass
    st = statuses[1]
    return [got, into.tolist(), st.Get_source(), st.Get_tag(), st.Get_count(MPI.INT64_T),
            st.Get_count(MPI.BYTE), late.test(),
            world.sendrecv(r, dest=right, sendtag=60, source=left, recvtag=60)]


def communicators():
    MPI = mpi()
    world = MPI.COMM_WORLD
    r = world.Get_rank()
    dup = world.Dup()
    odd = world.Split(MPI.UNDEFINED if r % 2 == 0 else 1, r)
    out = [dup.Get_rank(), dup.allgather(r), odd == MPI.COMM_NULL]
    if odd != MPI.COMM_NULL:
        out.append(odd.allgather(r))
        odd.Free()
        out.append(odd == MPI.COMM_NULL)
    dup.Free()
    world.Barrier()
    return out


def communicator_call_forms():
    """The other mpi4py call forms of TensorRT-LLM's communicator and its MPI utilities: the
    pkl5 world, Split_type by host, int64 all-gather and broadcast of buffers, the safe
    all-gather's Allgatherv, object all-reduce with MPI ops, numpy and object p2p."""
    MPI = mpi()
    from mpi4py.util import pkl5
    comm = pkl5.Intracomm(MPI.COMM_WORLD)
    r, n = comm.Get_rank(), comm.Get_size()
    local = comm.Split_type(split_type=9)                    # OMPI_COMM_TYPE_HOST
    tp, _ = tp_pp_comms(MPI)
    rows = np.empty(tp.Get_size() * 3, dtype=np.int64)
    tp.Allgather([np.ascontiguousarray([r, r + 1, r + 2], dtype=np.int64), MPI.INT64_T],
                 [rows, MPI.INT64_T])
    vec = np.ascontiguousarray([r * 5, 6], dtype=np.int64)
    comm.Bcast([vec, MPI.INT64_T], root=1)
    blob = np.frombuffer(pickle.dumps(("obj", r)), dtype=np.uint8)
    sizes = np.empty(n, dtype=np.int64)
    comm.Allgather([np.array([blob.size], dtype=np.int64), MPI.INT64_T], [sizes, MPI.INT64_T])
    everything = np.empty(int(sizes.sum()), dtype=np.uint8)
    offs = np.concatenate([[0], np.cumsum(sizes[:-1])]).astype(np.int32)
    comm.Allgatherv([blob, MPI.BYTE], [everything, sizes.astype(np.int32), offs, MPI.BYTE])
    objs = [pickle.loads(everything[o:o + k].tobytes()) for o, k in zip(offs, sizes)]
    reduced = [comm.allreduce(r + 1, op) for op in (MPI.SUM, MPI.PROD, MPI.MIN, MPI.MAX,
                                                    MPI.BAND, MPI.BOR, MPI.BXOR)]
    right, left = (r + 1) % n, (r - 1) % n
    arr = np.zeros(4, dtype=np.float32)
    req = comm.Isend(np.full(4, r, dtype=np.float32), right, tag=3)
    comm.Recv(arr, left, tag=3)
    req.wait()
    if r % 2 == 0:
        comm.Send(np.arange(3, dtype=np.int64), dest=r + 1, tag=4)
        comm.send({"to": r + 1}, dest=r + 1, tag=5)
        back = comm.isend("ack?", dest=r + 1, tag=6)
        back.wait()
        got = comm.recv(source=r + 1, tag=7)
    else:
        into = np.zeros(3, dtype=np.int64)
        comm.Recv(into, r - 1, tag=4)
        got = [into.tolist(), comm.recv(source=r - 1, tag=5), comm.recv(source=r - 1, tag=6)]
        comm.send("ack", dest=r - 1, tag=7)
    comm.Barrier()
    return [local.Get_size(), rows.tolist(), vec.tolist(), objs, reduced, arr.tolist(), got,
            tp.allreduce(r, MPI.SUM)]


LEGAL = ("broadcast_protocol", "gather_protocol", "split_tp_pp", "probe_loop",
         "probe_keeps_the_message",
         "vector_collectives", "requests_and_status", "communicators",
         "communicator_call_forms")


def main(names) -> None:
    """One rank of a real mpirun job: each program's result as ``RESULT [name, rank, value]``
    (``all``: every legal program in turn)."""
    from tests import mpi_bugs
    rank = mpi().COMM_WORLD.Get_rank()
    for name in (LEGAL if names == ["all"] else names):
        prog = globals().get(name) or getattr(mpi_bugs, name)
        os.write(1, ("RESULT " + json.dumps([name, rank, prog()]) + "\n").encode())  # 1 write


if __name__ == "__main__":
    main(sys.argv[1:])
