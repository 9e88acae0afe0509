"""How reports name the communicators of intercepted code: a group made by torch's
``new_group`` or MPI's ``Split`` is a ``split group``, a device mesh's group carries its
dimension (``mesh dp group``), never ``group group``; and a report's ``group_ranks`` are
sorted whatever the communicator's own order."""

import torch
import torch.distributed as tdist

import trtsim


def _skip_on(group_of, skipper: int):
    """Every rank all-reduces twice on its group; ``skipper`` once."""
    tdist.init_process_group("gloo")
    group = group_of(tdist.get_rank())
    for step in range(1 if tdist.get_rank() == skipper else 2):
        tdist.all_reduce(torch.ones(1), group=group)
    tdist.barrier()


def split_pairs():
    made = [tdist.new_group([3, 2], sort_ranks=False), tdist.new_group([1, 0], sort_ranks=False)]
    _skip_on(lambda r: made[0] if r >= 2 else made[1], skipper=3)


def mesh_columns():
    from torch.distributed.device_mesh import init_device_mesh
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    _skip_on(lambda r: mesh.get_group("dp"), skipper=3)


def mpi_split():
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    r = world.Get_rank()
    half = world.Split(color=r // 2, key=-r)         # members in descending order
    for _ in range(1 if r == 3 else 2):
        half.allreduce(1)
    world.Barrier()


def report(prog, intercept=("torch",)) -> trtsim.CollectiveError:
    try:
        trtsim.launch(prog, tp=4, intercept=intercept, timeout=60)
    except (trtsim.CollectiveMismatch, trtsim.CollectiveDeadlock) as err:
        return err
    raise AssertionError("no report")


def test_a_new_group_is_a_split_group_with_sorted_ranks():
    err = report(split_pairs)
    assert "split group [2, 3]" in str(err) and "group group" not in str(err), str(err)
    assert err.group_ranks == (2, 3)


def test_a_device_mesh_group_carries_its_dimension():
    err = report(mesh_columns)
    assert "mesh dp group [1, 3]" in str(err), str(err)
    assert err.group_ranks == (1, 3)


def test_an_mpi_split_is_a_split_group_with_sorted_ranks():
    err = report(mpi_split, ("mpi",))
    assert "split group [2, 3]" in str(err) and "group group" not in str(err), str(err)
    assert err.group_ranks == (2, 3)
