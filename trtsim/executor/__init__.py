"""The executor: TensorRT-LLM's PyExecutor loops (plain, overlap, PP) with the scheduler and
the attention-DP steps, over a transceiver and a KV cache it is given. It issues every
collective through ``Distributed`` and returns an ``ExecutorReport``."""
