"""Gates on configuration and sizes only: the same on every rank of the deployment."""


class Transceiver:
    def __init__(self, mapping, dist):
        self.mapping = mapping
        self.dist = dist
        self.need_tp_sync = mapping.tp_size > 1 and not mapping.enable_attention_dp
        self.need_pp_sync = mapping.pp_size > 1

    def consensus(self, local_ids):
        if self.mapping.world_size == 1:
            return local_ids
        ready = local_ids
        if self.need_tp_sync:
            ready = self.dist.tp_allgather(ready)
        if self.need_pp_sync:
            ready = self.dist.pp_allgather(ready)
        return ready

    def step(self, requests):
        # Without attention DP every TP rank gets the same requests: a skip on them is
        # uniform on the TP group, where the only gather of this path runs.
        if not requests and not self.mapping.enable_attention_dp:
            return []
        return self.dist.tp_allgather(len(requests)) if self.need_tp_sync else []
