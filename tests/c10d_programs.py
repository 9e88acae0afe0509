"""torch.distributed programs that need real process groups (module-level: spawned ranks
import them). Each takes trtsim's ``dist`` only to learn its rank, as a framework's worker
is told its rank by its launcher, and returns what it saw for the test to check."""

import torch
import torch.distributed as tdist
import torch.distributed._functional_collectives as funcol
from torch.distributed.device_mesh import init_device_mesh


def groups_are_real(dist):
    r = dist.global_rank
    tdist.init_process_group("cuda:nccl,cpu:gloo", rank=r, world_size=4)
    world = tdist.group.WORLD
    tp = [tdist.new_group([0, 1]), tdist.new_group([2, 3])][r // 2]
    sub, subs = tdist.new_subgroups(2)
    store = tdist.distributed_c10d._get_default_store()
    if r == 3:
        store.set("late", f"from {r}")
    got = store.get("late").decode()          # ranks 0-2 wait for rank 3's key
    return dict(
        real=[isinstance(g, tdist.ProcessGroup) for g in (world, tp, sub)],
        sizes=(world.size(), tp.size(), sub.size()), ranks=(world.rank(), tp.rank()),
        tp_ranks=tdist.get_process_group_ranks(tp), sub_ranks=tdist.get_process_group_ranks(sub),
        subgroups=len(subs), group_rank=tdist.get_group_rank(tp, r), store=got,
        backend=str(tdist.get_backend(tp)), world_size=tdist.get_world_size(),
        rank=tdist.get_rank())


def functional(dist):
    r = dist.global_rank
    tdist.init_process_group("gloo", rank=r, world_size=2)
    pg = tdist.group.WORLD
    x = torch.tensor([1.0, 2.0]) * (r + 1)
    out = dict(
        all_reduce=funcol.wait_tensor(funcol.all_reduce(x, "sum", pg)).tolist(),
        all_gather=funcol.wait_tensor(funcol.all_gather_single(x, 0, pg)).tolist(),
        reduce_scatter=funcol.wait_tensor(
            funcol.reduce_scatter_single(torch.arange(4.0) + r, "sum", 0, pg)).tolist(),
        all_to_all=funcol.wait_tensor(
            funcol.all_to_all_single(torch.tensor([10.0 * r, 10.0 * r + 1]), [1, 1], [1, 1],
                                     pg)).tolist(),
        broadcast=funcol.wait_tensor(funcol.broadcast(x, 0, pg)).tolist(),
        coalesced=[funcol.wait_tensor(t).tolist() for t in
                   funcol.all_reduce_coalesced([x, x * 10], "max", pg)])
    ts = [torch.ones(2) * (r + 1), torch.ones(1) * (r + 3)]
    tdist.all_reduce_coalesced(ts)
    out["all_reduce_coalesced"] = [t.tolist() for t in ts]
    return out


def device_mesh(dist):
    r = dist.global_rank
    tdist.init_process_group("gloo", rank=r, world_size=4)
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("pp", "tp"))
    tp, pp = mesh.get_group("tp"), mesh.get_group("pp")
    t = torch.tensor([float(r)])
    tdist.all_reduce(t, group=tp)
    y = funcol.wait_tensor(funcol.all_reduce(torch.tensor([float(r)]), "sum", (mesh, 0)))
    return dict(tp=tdist.get_process_group_ranks(tp), pp=tdist.get_process_group_ranks(pp),
                tp_sum=t.item(), pp_sum=y.item(), real=isinstance(tp, tdist.ProcessGroup))


def funcol_skip(dist):
    """Rank 1 skips the second functional all-reduce: its third pairs with the others'
    second unless the guard sees the skip."""
    r = dist.global_rank
    tdist.init_process_group("gloo")
    for step in range(3):
        dist.set_iteration(step)
        if not (r == 1 and step == 1):
            funcol.wait_tensor(funcol.all_reduce(torch.ones(1), "sum", tdist.group.WORLD))


def torchdist_shaped(dist):
    """The calls of TensorRT-LLM's ``TorchDist`` (written fresh in its shapes): the device
    mesh of the rank's Mapping, the default store, a node-local group made with
    ``backend="cuda:nccl,cpu:gloo"``, object collectives on the mesh's groups, a gather to a
    destination, objects sent as a size then bytes, and PP tensors through the pipeline
    group's own ``send``/``recv``."""
    from torch.distributed.distributed_c10d import _object_to_tensor, _tensor_to_object
    tdist.init_process_group("cuda:nccl,cpu:gloo")
    mapping, r = dist.mapping, tdist.get_rank()
    mapping.build_mesh()
    store = tdist.distributed_c10d._get_default_store()
    local = tdist.new_group(ranks=list(range(tdist.get_world_size())),
                            backend="cuda:nccl,cpu:gloo")
    tp, pp = mapping.tp_group_pg, mapping.pp_group_pg
    gathered = [None] * tp.size()
    tdist.all_gather_object(gathered, {"rank": r}, group=tp)
    dst = mapping.tp_group[0]
    at_dst = [None] * tp.size() if r == dst else None
    tdist.gather_object(f"r{r}", at_dst, dst=dst, group=tp)
    box = [f"from {mapping.pp_group[0]}" if r == mapping.pp_group[0] else None]
    tdist.broadcast_object_list(box, src=mapping.pp_group[0], group=pp,
                                device=torch.device("cpu"))
    store.set(f"seen/{r}", "yes")
    # objects round the PP ring, as its isend_object / recv_object do: a size, then bytes
    nxt, prv = mapping.pp_group[(mapping.pp_rank + 1) % 2], mapping.pp_group[(mapping.pp_rank - 1) % 2]
    data, size = _object_to_tensor({"to": nxt}, torch.device("cpu"), tdist.group.WORLD)
    works = [tdist.isend(torch.tensor([size], dtype=torch.int32), dst=nxt),
             tdist.isend(data, dst=nxt)]
    got_size = torch.tensor([0], dtype=torch.int32)
    tdist.recv(got_size, src=prv)
    got = torch.empty(got_size.item(), dtype=torch.uint8)
    tdist.recv(got, src=prv)
    for w in works:
        w.wait()
    obj = _tensor_to_object(got, got_size.item(), tdist.group.WORLD)
    # activations to the next stage through the pipeline group itself (PPCommTorch's shape)
    local_next = mapping.pp_group.index(nxt)
    act = torch.full((2,), float(r))
    if mapping.is_first_pp_rank():
        pp.send([act], local_next, 0).wait()
    else:
        pp.recv([act], mapping.pp_group.index(prv), 0).wait()
    return dict(gathered=gathered, at_dst=at_dst, box=box[0], obj=obj, act=act.tolist(),
                store=store.get(f"seen/{r}").decode(), local=local.size(),
                tp=tdist.get_process_group_ranks(tp), pp=tdist.get_process_group_ranks(pp))


def destroy_while_waiting():
    """Rank 1 waits in an all-reduce on a group rank 0 never enters, and rank 0 destroys it."""
    tdist.init_process_group("gloo")
    group = tdist.new_group([0, 1])
    if tdist.get_rank() == 1:
        tdist.all_reduce(torch.zeros(1), group=group)
    tdist.destroy_process_group(group)


def local_synchronization(dist):
    """Ranks 0 and 1 make two groups of their own, ranks 2 and 3 one, each set without the
    others (``use_local_synchronization``); then every rank makes a world group and
    all-reduces on it, and each pair all-reduces on its last group. 4 ranks."""
    r = dist.global_rank
    tdist.init_process_group("gloo")
    if r < 2:
        tdist.new_group([0, 1], use_local_synchronization=True)
        pair = tdist.new_group([0, 1], use_local_synchronization=True)
    else:
        pair = tdist.new_group([2, 3], use_local_synchronization=True)
    world = tdist.new_group([0, 1, 2, 3])
    t, p = torch.ones(1), torch.tensor([float(r)])
    tdist.all_reduce(t, group=world)
    tdist.all_reduce(p, group=pair)
    return t.item(), p.item(), world.group_name


def store_waits(dist, case: str):
    """Store waits on inproc. ``never``: rank 0 gets a key nobody sets (rank 1 finishes).
    ``timeout``: rank 0 waits 5 ms for a key nobody sets, then sets the key rank 1 waits for
    without a timeout. ``forever``: both wait, without a timeout, for keys nobody sets."""
    import datetime
    r = dist.global_rank
    tdist.init_process_group("gloo")
    store = tdist.distributed_c10d._get_default_store()
    if case == "never" and r == 0:
        store.get("never")
    if case == "timeout":
        if r == 0:
            try:
                store.wait(["never"], datetime.timedelta(milliseconds=5))
            except tdist.DistStoreError as exc:
                store.set("late", str(exc))
            return "timed out"
        store.wait(["late"], datetime.timedelta(0))
        return store.get("late").decode()
    if case == "forever":
        store.wait([f"never{r}"], datetime.timedelta(0))
    return "done"


def silenced_new_group(dist):
    """Each rank points fd 1 at /dev/null while it makes a group, and back after, as vLLM
    does around ``new_group`` (its C libraries print there)."""
    import os
    tdist.init_process_group("gloo")
    saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        group = tdist.new_group([0, 1])      # a collective: the other rank runs meanwhile
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
    return group.size()
