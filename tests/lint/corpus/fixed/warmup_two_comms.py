"""Warm-up, fixed: a rank may skip only where no rank has a batch together with it - without
attention DP every TP rank gets the same warm-up batches, so there the skip is uniform."""


class WarmupRunner:
    def __init__(self, mapping, tp_comm, pp_comm, model):
        self.mapping = mapping
        self.tp_comm = tp_comm
        self.pp_comm = pp_comm
        self.model = model
        self.warmup_token_counts = mapping.warmup_token_counts

    def warmup(self, resource_manager):
        for num_tokens in self.warmup_token_counts:
            self.pp_comm.barrier()
            batch = resource_manager.make_dummy_batch(num_tokens)
            if batch is None and not self.mapping.enable_attention_dp:
                continue
            self._forward(batch)

    def _forward(self, batch):
        hidden = self.model(batch)
        return self.tp_comm.allgather(hidden)
