"""Control-plane programs written three ways (trtsim.Distributed, raw torch.distributed, mpi4py),
module-level so spawned ranks import them. The raw ones know nothing of trtsim: they find their
rank through the API they call (launch(..., intercept=...))."""

import numpy as np
import torch
import torch.distributed as tdist

DP = 2                                  # attention-DP ranks (tp=2 layouts)


# -- vLLM #43547: a DP step with zero tokens skips the DP all-reduce -------------------------
class DistWorker:
    def __init__(self, dist):
        self.dist = dist

    def execute_model(self, step):
        tokens = 0 if (self.dist.rank == 1 and step == 1) else 4
        if tokens:                       # the zero-token step returns before coordinating
            self.dist.tp_allreduce(tokens)


class TorchWorker:
    def execute_model(self, step):
        tokens = 0 if (tdist.get_rank() == 1 and step == 1) else 4
        if tokens:
            t = torch.tensor([tokens] * DP, dtype=torch.int32)
            tdist.all_reduce(t)


class MPIWorker:
    def __init__(self):
        from mpi4py import MPI
        self.comm = MPI.COMM_WORLD

    def execute_model(self, step):
        tokens = 0 if (self.comm.Get_rank() == 1 and step == 1) else 4
        if tokens:
            self.comm.allreduce(tokens)


def zero_token_dist(dist):
    w = DistWorker(dist)
    for step in range(4):
        w.execute_model(step)


def zero_token_torch():
    tdist.init_process_group("gloo")
    w = TorchWorker()
    for step in range(4):
        w.execute_model(step)


def zero_token_mpi():
    w = MPIWorker()
    for step in range(4):
        w.execute_model(step)


# -- TensorRT-LLM #13998: warmup batch None skips the TP gather, the rest wait in a barrier ---
def warmup_dist(dist):
    if dist.tp_rank != dist.tp_size - 1:
        dist.tp_allgather(dist.rank)
    dist.barrier()


def warmup_torch():
    tdist.init_process_group("gloo")
    r, n = tdist.get_rank(), tdist.get_world_size()
    tp_groups = [tdist.new_group([2 * i, 2 * i + 1]) for i in range(n // 2)]
    tp = tp_groups[r // 2]
    if r % 2 == 0:                      # the last TP rank's warmup batch is None
        out = [None, None]
        tdist.all_gather_object(out, r, group=tp)
    tdist.barrier()


def warmup_mpi():
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    tp = world.Split(color=world.Get_rank() // 2, key=world.Get_rank())
    if tp.Get_rank() == 0:
        tp.allgather(world.Get_rank())
    world.Barrier()


# -- legal programs ---------------------------------------------------------------------------
def legal_torch():
    tdist.init_process_group("gloo")
    r, n = tdist.get_rank(), tdist.get_world_size()
    sub = tdist.new_group(list(range(0, n, 2)))
    out = []
    for step in range(3):                               # a symmetric loop
        t = torch.tensor([float(r + step)])
        tdist.all_reduce(t, op=tdist.ReduceOp.MAX)
        out.append(t.item())
    box = [f"cfg-{r}" if r == 0 else None]              # root / non-root branches
    if r == 0:
        tdist.broadcast_object_list(box, src=0)
    else:
        tdist.broadcast_object_list(box, src=0)
    out.append(box[0])
    send = torch.full((2,), float(r))                   # a p2p ring
    recv = torch.zeros(2)
    ops = [tdist.P2POp(tdist.isend, send, (r + 1) % n), tdist.P2POp(tdist.irecv, recv, (r - 1) % n)]
    for work in tdist.batch_isend_irecv(ops):
        work.wait()
    out.append(recv.tolist())
    if r % 2 == 0:                                      # a subgroup
        gathered = [torch.zeros(1) for _ in range(n // 2)]
        tdist.all_gather(gathered, torch.tensor([float(r)]), group=sub)
        out.append([g.item() for g in gathered])
    tdist.barrier()
    return out


def legal_mpi():
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    r, n = comm.Get_rank(), comm.Get_size()
    out = [comm.allreduce(r + step, op=MPI.MAX) for step in range(3)]
    cfg = comm.bcast(f"cfg-{r}" if r == 0 else None, root=0)
    req = comm.isend(r, dest=(r + 1) % n, tag=7)
    out += [cfg, comm.recv(source=(r - 1) % n, tag=7)]
    req.wait()
    sub = comm.Split(color=r % 2, key=r)
    if r % 2 == 0:
        buf = np.zeros(sub.Get_size(), dtype=np.int64)
        sub.Allgather(np.array([r], dtype=np.int64), buf)
        out.append(buf.tolist())
    comm.Barrier()
    return out


def legal_dist(dist):
    r, n = dist.rank, dist.world_size
    out = [dist.allreduce(r + step, op="max") for step in range(3)]
    out.append(dist.broadcast(f"cfg-{r}" if r == 0 else None, 0))
    h = dist.isend_object(r, (r + 1) % n, tag=7)
    out.append(dist.recv_object((r - 1) % n, tag=7))
    h.wait()
    dist.barrier()
    return out


# -- across APIs: half the ranks in a torch collective, half in an MPI one ---------------------
def torch_against_mpi():
    from mpi4py import MPI
    tdist.init_process_group("gloo")
    if tdist.get_rank() < 2:
        tdist.all_reduce(torch.ones(1))
    else:
        MPI.COMM_WORLD.Barrier()
