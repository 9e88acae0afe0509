"""The realcode tests' import hook: vLLM's and SGLang's own files, unmodified, with the imports
that cannot run on this machine stubbed (the finders are ``hook.py``).

``install(roots)`` makes the extracted packages importable, their own files first, and the
stubs below stand in where those files import what cannot run here: each says what it
replaces and why. The rule is the least that lets their distributed layers import and run
their CPU (gloo) paths; where a framework has a switch of its own, ``frameworks.py`` sets it
instead. Limits: the stubs are as wide as the paths these tests take (another entry point may
import a module that is neither extracted nor stubbed), and a placeholder raises
``StubCalled`` when code calls it, so a path that needs a stubbed module fails loudly rather
than running on a fake.
"""

from __future__ import annotations

import re
from pathlib import Path

from . import hook
from .hook import Placeholder, Stub


def install(roots: dict[str, Path]) -> None:
    """Load ``roots``' packages (top package -> extracted root) through the hook and these
    stubs, from now on in this process. Idempotent; a later call adds roots."""
    hook.install(roots, STUBS, ABSENT)


# -- stand-ins with behaviour -------------------------------------------------------------


def _triton(module) -> None:
    """``@triton.jit`` (and ``autotune``, ``heuristics``) turn a kernel into a placeholder:
    modules that define Triton kernels import, and launching one raises StubCalled."""
    def decorator(*args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return Placeholder(f"triton kernel {args[0].__qualname__}")
        return decorator

    module.jit = module.autotune = module.heuristics = decorator


def _sglang_sampler(module) -> None:
    from sglang.srt.utils import get_bool_env_var      # SGLang's own reading of the flag
    module.SYNC_TOKEN_IDS_ACROSS_TP = get_bool_env_var("SYNC_TOKEN_IDS_ACROSS_TP")


def _regex_as_re(module) -> None:
    module.__dict__.update({k: v for k, v in vars(re).items() if not k.startswith("__")})


def _shm_broadcast(module) -> None:
    class MessageQueue:
        @staticmethod
        def create_from_process_group(*args, **kwargs):
            return None

        create_from_process_group_single_reader = create_from_process_group

    module.MessageQueue = MessageQueue


def _gpu_sync_debug(module) -> None:
    import contextlib
    module.gpu_sync_allowed = lambda first_only=False: contextlib.nullcontext()
    module.with_gpu_sync_check = lambda fn: fn


def _vllm_config(module) -> None:
    """vLLM's config tree as far as its distributed layer reads it: ``ParallelConfig``'s fields
    (vLLM's names and defaults), a ``VllmConfig`` holding it, and vLLM's current-config global
    with its getters and setter (module state, as in ``vllm/config/vllm.py``: per rank under
    ``rank_local``)."""
    import contextlib
    from dataclasses import dataclass as plain_dataclass, field
    from datetime import timedelta

    @plain_dataclass
    class ParallelConfig:
        pipeline_parallel_size: int = 1
        tensor_parallel_size: int = 1
        prefill_context_parallel_size: int = 1
        decode_context_parallel_size: int = 1
        data_parallel_size: int = 1
        data_parallel_rank: int = 0
        data_parallel_master_ip: str = "127.0.0.1"
        distributed_executor_backend: str | None = None
        disable_nccl_for_dp_synchronization: bool | None = None
        enable_elastic_ep: bool = False
        enable_expert_parallel: bool = False
        enable_eplb: bool = False
        all2all_backend: str = "allgather_reducescatter"
        enable_dbo: bool = False
        ubatch_size: int = 0
        dbo_decode_token_threshold: int = 32
        dbo_prefill_token_threshold: int = 512
        nnodes: int = 1
        master_addr: str = "127.0.0.1"
        master_port: int = 29501
        distributed_timeout_seconds: int | None = None
        cpu_distributed_timeout_seconds: int | None = None
        _coord_store_port: int = 0

        @property
        def cpu_distributed_timeout(self):
            seconds = self.cpu_distributed_timeout_seconds
            return None if seconds is None else timedelta(seconds=seconds)

        @property
        def world_size(self) -> int:
            return (self.pipeline_parallel_size * self.tensor_parallel_size
                    * self.prefill_context_parallel_size)

        @property
        def world_size_across_dp(self) -> int:
            return self.world_size * self.data_parallel_size

        @property
        def nnodes_within_dp(self) -> int:
            return 1

        @property
        def use_all2all(self) -> bool:
            # vLLM's rule, with its use_sequence_parallel_moe spelled out
            sequence_parallel_moe = (
                self.all2all_backend in ("allgather_reducescatter", "deepep_high_throughput",
                                         "deepep_low_latency")
                and self.enable_expert_parallel and self.tensor_parallel_size > 1
                and self.data_parallel_size > 1)
            return (self.data_parallel_size > 1 or sequence_parallel_moe
                    or (self.enable_expert_parallel and self.prefill_context_parallel_size > 1))

        @property
        def use_ubatching(self) -> bool:
            return self.enable_dbo or self.ubatch_size > 1

        @property
        def num_ubatches(self) -> int:
            return 2 if self.enable_dbo else self.ubatch_size

    @plain_dataclass
    class ModelConfig:                     # what parallel_state asks of the model
        architecture: str = "LlamaForCausalLM"
        is_moe: bool = False

    @plain_dataclass
    class VllmConfig:
        parallel_config: ParallelConfig = field(default_factory=ParallelConfig)
        model_config: ModelConfig | None = None
        engram_config: object = None

    def get_current_vllm_config_or_none():
        return module._current_vllm_config

    def get_current_vllm_config():
        if module._current_vllm_config is None:
            raise AssertionError("Current vLLM config is not set (set_current_vllm_config)")
        return module._current_vllm_config

    @contextlib.contextmanager
    def set_current_vllm_config(config, check_compile=False, prefix=None):
        old, module._current_vllm_config = module._current_vllm_config, config
        try:
            yield
        finally:
            module._current_vllm_config = old

    module.__dict__.update(ParallelConfig=ParallelConfig, VllmConfig=VllmConfig,
                           ModelConfig=ModelConfig,
                           _current_vllm_config=None,
                           get_current_vllm_config=get_current_vllm_config,
                           get_current_vllm_config_or_none=get_current_vllm_config_or_none,
                           set_current_vllm_config=set_current_vllm_config)


# -- the stubs ----------------------------------------------------------------------------

ABSENT: dict[str, Stub] = {
    "regex": Stub("the third-party drop-in for re; the patterns these files compile are "
                  "plain re patterns, so the stdlib re stands in", _regex_as_re),
    "orjson": Stub("sglang's fast JSON for HTTP payloads; no server runs here"),
    "pydantic_core": Stub("sglang's msgspec_utils builds pydantic schemas for its API "
                          "models; no API model is validated here"),
    "pybase64": Stub("sglang's base64 for image payloads; no request is decoded here"),
    "requests": Stub("sglang's HTTP client helpers; nothing is fetched here"),
    "starlette": Stub("sglang's HTTP server routing; no server runs here"),
    "triton": Stub("the GPU kernel compiler; SGLang defines Triton kernels at module level "
                   "and launches them on GPUs only", _triton),
    "urllib3": Stub("vllm.utils.network_utils parses zmq URLs with it; no zmq path runs here"),
}

STUBS: dict[str, Stub] = {
    "sglang": Stub("sglang/__init__.py is the frontend language API (it imports transformers "
                   "patches and sglang.lang); an empty package over the extracted files stands "
                   "in, and sglang.srt loads as published", lambda module: None, init_only=True),
    "sglang.kernels.ops.communication": Stub(
        "SGLang's CUDA all-reduce kernels (JIT-compiled through tvm_ffi); its custom "
        "all-reduce imports them at module level and uses them on GPUs only"),
    "sglang.srt.configs": Stub("model configs (transformers' PretrainedConfig subclasses); "
                               "the distributed bootstrap imports ModelConfig for typing and "
                               "model runners"),
    "sglang.srt.layers.sampler": Stub(
        "model code (logits processor, vocab embedding: transformers); initialize_model_parallel "
        "reads only its SYNC_TOKEN_IDS_ACROSS_TP flag, which the stand-in reads from the "
        "environment as sampler.py does", _sglang_sampler),
    "vllm.config": Stub("vLLM's configuration is a tree of pydantic dataclasses (pydantic is "
                        "not installed here; its ModelConfig pulls in transformers); the "
                        "distributed layer reads only ParallelConfig and the current config",
                        _vllm_config),
    "vllm.distributed.device_communicators.shm_broadcast": Stub(
        "vLLM's MessageQueue: a shared-memory ring with zmq sockets that its TP group uses for "
        "broadcast_object. It is no torch.distributed call (no guard sees it), and it blocks in "
        "C (spinning, zmq recv), which no inproc rank can switch out of; the stand-in's "
        "create_from_process_group gives no queue, so the GroupCoordinator broadcasts over its "
        "CPU group with torch.distributed, as it does for its groups without one",
        _shm_broadcast),
    "vllm.env_override": Stub("vllm/__init__.py imports it first to patch torch's inductor and "
                              "dynamo for vLLM's compiled kernels; importing torch._inductor "
                              "costs seconds per process (each gloo rank is one) and nothing "
                              "compiles here", lambda module: None),
    "vllm.utils.gpu_sync_debug": Stub("a CUDA sync checker: its module level decorates with "
                                      "torch.compiler (importing torch._dynamo, seconds per "
                                      "process); on a CPU platform its gpu_sync_allowed() is a "
                                      "null context, and so is the stand-in's", _gpu_sync_debug),
    "vllm.model_executor": Stub("model code (layers, quantization, weight loaders: "
                                "transformers, CUDA kernels); the modules loaded here import a "
                                "few of its names at module level and never call them"),
    "vllm.utils.deep_gemm": Stub("DeepGEMM's GPU kernels, reached through vLLM's quantization "
                                 "layers (model code, transformers); ubatch_utils imports "
                                 "set_num_sms for GPU microbatching only"),
}
