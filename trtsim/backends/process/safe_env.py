"""The environment every rank process runs under (spawned, torchrun's and mpirun's)."""

# Environment every rank runs under: NVLink multicast stays off (it can take a shared host's
# GPUs out of service), and NCCL waits no longer than the launch.
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
            "NVSHMEM_DISABLE_NVLS": "1"}
