"""TensorRT-LLM's device mesh of a Mapping (``tensorrt_llm/_torch/device_mesh.py``): the
torch ``DeviceMesh`` whose dimension groups its ``TorchDist`` communicates on.

Facts kept from TensorRT-LLM: ``build_mesh()`` does nothing for a world of one rank or when
the mesh exists; it needs torch.distributed initialised (RuntimeError otherwise); the
dimensions run from the outermost to the innermost: ``pp``, then ``tp`` (or ``moe_tp`` and
``moe_ep`` when experts are parallel, with ``tp`` their flattening), then ``cp`` -- the
Mapping's rank formula laid out row-major. ``tp_group_pg`` and the other ``*_group_pg`` are
the dimensions' process groups (the world group, or a one-rank stand-in, for a world of one).

Where it differs: TensorRT-LLM keeps one mesh per process, on the class; here every Mapping
keeps its own (inproc ranks share the process), and rebuilds it when torch's default group
is another one than the mesh was built on (a later launch). The mesh's device is the host
("cpu") unless the default group runs NCCL: trtsim's control plane runs on the host. Inside
an inproc rank this needs ``intercept=("torch",)`` (torch's groups exist only then).
"""

from __future__ import annotations

from typing import Any

_ATTR = "_trtsim_device_mesh"          # (default group it was built on, mesh, flattened tp)


class SingleProcessGroup:
    """The group of a world of one rank, when torch.distributed is not initialised."""

    @staticmethod
    def rank() -> int:
        return 0

    @staticmethod
    def size() -> int:
        return 1


def _dims(mapping) -> tuple[tuple[str, ...], tuple[int, ...]]:
    if mapping.moe_ep_size > 1:
        return ("pp", "moe_tp", "moe_ep", "cp"), (mapping.pp_size, mapping.moe_tp_size,
                                                  mapping.moe_ep_size, mapping.cp_size)
    return ("pp", "tp", "cp"), (mapping.pp_size, mapping.tp_size, mapping.cp_size)


def build_mesh(mapping) -> None:
    """Build ``mapping``'s device mesh once per default process group."""
    import torch.distributed as tdist
    if mapping.world_size == 1 or _built(mapping) is not None:
        return
    if not tdist.is_initialized():
        raise RuntimeError("DeviceMesh creation requested but torch.distributed process group "
                           "has not been initialised.")
    if tdist.get_world_size() != mapping.world_size:
        raise NotImplementedError(
            f"build_mesh: torch's world has {tdist.get_world_size()} ranks and this Mapping's "
            f"instance {mapping.world_size}: a mesh of one instance inside a larger world "
            "(a disaggregated launch of several instances) is not covered")
    from torch.distributed.device_mesh import init_device_mesh
    names, shape = _dims(mapping)
    device = "cuda" if str(tdist.get_backend()) == "nccl" else "cpu"
    mesh = init_device_mesh(device, mesh_shape=shape, mesh_dim_names=names)
    tp_mesh = mesh["moe_tp", "moe_ep"]._flatten(mesh_dim_name="tp") \
        if mapping.moe_ep_size > 1 else None
    object.__setattr__(mapping, _ATTR, (tdist.group.WORLD, mesh, tp_mesh))


def _built(mapping):
    import torch.distributed as tdist
    held = getattr(mapping, _ATTR, None)
    if held is None or not tdist.is_initialized() or held[0] is not tdist.group.WORLD:
        return None
    return held


def group_pg(mapping, name: str) -> Any:
    """The process group of mesh dimension ``name`` (built on first use, as there)."""
    import torch.distributed as tdist
    if mapping.world_size == 1:
        return tdist.group.WORLD if tdist.is_initialized() else SingleProcessGroup()
    build_mesh(mapping)
    _, mesh, tp_mesh = _built(mapping)
    if name == "tp" and tp_mesh is not None:
        return tp_mesh.get_group()
    if name not in (mesh.mesh_dim_names or ()):
        raise ValueError(f"{name}_group_pg: the device mesh has no dimension {name!r} "
                         f"(it has {', '.join(mesh.mesh_dim_names)})")
    return mesh[name].get_group()


def device_mesh(mapping):
    """The mesh itself (TensorRT-LLM's ``DeviceMeshTopology.device_mesh``), built if needed;
    None for a world of one rank."""
    if mapping.world_size == 1:
        return None
    build_mesh(mapping)
    return _built(mapping)[1]


__all__ = ["build_mesh", "group_pg", "device_mesh", "SingleProcessGroup"]
