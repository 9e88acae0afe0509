"""TensorRT-LLM #14020's shape: under attention DP each rank's count of free KV blocks decides
whether it balances its batch with a TP allgather; the ranks agree for hundreds of iterations,
then one runs short of blocks."""


class KVCacheManager:
    def __init__(self, num_blocks, tokens_per_block):
        self.free_blocks = num_blocks
        self.tokens_per_block = tokens_per_block

    def add_sequence(self, request):
        needed = -(-len(request.prompt) // self.tokens_per_block)
        self.free_blocks -= needed

    def get_num_free_blocks(self):
        return self.free_blocks


class Scheduler:
    def __init__(self, dist, mapping, kv_cache_manager, reserve_blocks):
        self.dist = dist
        self.mapping = mapping
        self.kv_cache_manager = kv_cache_manager
        self.reserve_blocks = reserve_blocks

    def schedule(self, active_requests):
        free = self.kv_cache_manager.get_num_free_blocks()
        if free < self.reserve_blocks:  # GATE
            return []
        return self._balance(active_requests)

    def _balance(self, active_requests):
        if self.mapping.enable_attention_dp:
            counts = self.dist.tp_allgather(len(active_requests))
            return [r for i, r in enumerate(active_requests) if i < min(counts)]
        return active_requests
