"""TensorRT-LLM #13998/#14126's shape: during warm-up a rank without a batch skips the
forward, and with it the allgather on the TP communicator, while every rank still meets on the
PP communicator's barrier ("no asymmetry in test env": every rank had a batch there)."""


class WarmupRunner:
    def __init__(self, mapping, tp_comm, pp_comm, model):
        self.mapping = mapping
        self.tp_comm = tp_comm
        self.pp_comm = pp_comm
        self.model = model
        self.warmup_token_counts = mapping.warmup_token_counts
        self.attention_dp = mapping.enable_attention_dp

    def warmup(self, resource_manager):
        for num_tokens in self.warmup_token_counts:
            self.pp_comm.barrier()
            batch = resource_manager.make_dummy_batch(num_tokens)
            if batch is None:  # GATE
                continue
            self._forward(batch)

    def _forward(self, batch):
        hidden = self.model(batch)
        return self.tp_comm.allgather(hidden)
