"""First-principles cost model of TensorRT-LLM serving steps, for the virtual-time simulator.

    from trtsim.layout import ParallelLayout
    from trtsim.perf import CostModel, get_hardware, get_model
    dep8 = ParallelLayout(tp_size=8, ep_size=8, enable_attention_dp=True)
    cm = CostModel(get_hardware("GB300"), get_model("DeepSeek-R1-FP4"), dep8)
    cm.prefill_time(8192)                      # s, one 8k-token context step on a DP rank
    cm.generation_step_time(32, 8192, 3)       # s, verify + 3 MTP drafts, 32 requests a rank
    cm.kv_transfer_time(8192, dep8)             # s, ctx -> gen

Modules: ``hardware`` (GPUs), ``models`` (shapes, weight formats), ``roofline`` (ops,
CostModel), ``comm_cost`` (collectives, KV transfer, host-object gathers), ``host_collectives``
(measured host-collective latency and straggler wait), ``iteration`` (host-bound or GPU-bound
iterations, with overlap), ``serving_sim`` and ``client`` (the serving benchmark). All values
are frozen dataclasses; every function is pure. Figures and their sources: docs/COST_MODEL.md,
docs/PERF_MODEL.md.
"""

from .comm_cost import (CPP_TRANSCEIVER, HOST_GATHER_MEASURED, PYTHON_TRANSCEIVER,
                        HostGatherParams, Link, TransceiverOverhead, all_gather_time,
                        all_reduce_time, all_to_all_time, group_link, host_gather_cost,
                        reduce_scatter_time, send_time)
from .hardware import B200, GB200, GB300, H100_SXM, H200_SXM, HARDWARE, Hardware, get_hardware
from .host_collectives import HOST_COLLECTIVES, HostCollectiveData, Spread, load_host_collectives
from .iteration import HostCollectives, HostPrices, IterationTime, iteration_time
from .models import (BF16, DEEPSEEK_NVFP4, DEEPSEEK_R1_FP4, DEEPSEEK_V3, FP8, GPT_OSS_120B,
                     GPT_OSS_MXFP4, MODELS, QWEN3_235B_A22B, V4_FP4_FP8, V4_PRO, AttentionSpec,
                     ModelSpec, MoESpec, Precision, get_model)
from .roofline import CostModel, Op, RequestGroup, attended_pairs

__all__ = [
    "CostModel", "Op", "RequestGroup", "attended_pairs",
    "Hardware", "HARDWARE", "get_hardware", "H100_SXM", "H200_SXM", "B200", "GB200", "GB300",
    "ModelSpec", "AttentionSpec", "MoESpec", "Precision", "MODELS", "get_model",
    "DEEPSEEK_V3", "DEEPSEEK_R1_FP4", "GPT_OSS_120B", "QWEN3_235B_A22B", "V4_PRO",
    "BF16", "FP8", "DEEPSEEK_NVFP4", "GPT_OSS_MXFP4", "V4_FP4_FP8",
    "Link", "group_link", "all_reduce_time", "all_gather_time", "reduce_scatter_time",
    "all_to_all_time", "send_time", "HostGatherParams", "HOST_GATHER_MEASURED",
    "host_gather_cost", "TransceiverOverhead", "PYTHON_TRANSCEIVER", "CPP_TRANSCEIVER",
    "HOST_COLLECTIVES", "HostCollectiveData", "Spread", "load_host_collectives",
    "HostCollectives", "HostPrices", "IterationTime", "iteration_time",
]
