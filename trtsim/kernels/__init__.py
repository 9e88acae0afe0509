"""trtsim.kernels: the MTP / tree-speculation kernels on torch tensors, CPU or CUDA, with the same
semantics on both.

CUDA tensors run the CUDA C++ kernels of the top-level ``kernels/`` folder, compiled at run time
by CuPy (NVRTC) for the GPU's architecture and launched on torch's current stream without
copies; CPU tensors run numba twins of the same algorithms. fp16/bf16 inputs are widened to
fp32 on the CPU, which keeps every argmax and comparison exact.

Pinned (DESIGN 2): mtp_sample_and_accept, verify_tree_greedy, rejection_sample.
Also: relaxed_accept, update_hidden_ring, prepare_drafter_inputs, build_dynamic_tree,
relocate_kv, and the torch helpers expand_tree_level / select_tree_candidates.

Conventions: token outputs are int32; padding is -1 (accepted tokens past num_accepted,
accept_index, predicts, rejection output); the tree layout outputs of build_dynamic_tree are
int64 like SGLang's.
"""

from .drafter_inputs import prepare_drafter_inputs
from .hidden_ring import update_hidden_ring
from .kv_relocate import relocate_kv
from .rejection import rejection_sample
from .relaxed_accept import relaxed_accept
from .sample_accept import mtp_sample_and_accept
from .tree_build import build_dynamic_tree
from .tree_select import TreeLevel, expand_tree_level, select_tree_candidates
from .tree_verify import verify_tree_greedy

__all__ = [
    "mtp_sample_and_accept",
    "verify_tree_greedy",
    "rejection_sample",
    "relaxed_accept",
    "update_hidden_ring",
    "prepare_drafter_inputs",
    "build_dynamic_tree",
    "relocate_kv",
    "expand_tree_level",
    "select_tree_candidates",
    "TreeLevel",
]
