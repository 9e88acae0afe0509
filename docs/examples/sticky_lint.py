class KvCacheTransceiver:
    def __init__(self, mapping, dist):
        self.dist = dist
        self._ever_had_send_session = False
        self._ctx_need_pp_sync = mapping.pp_size > 1

    def respond_and_send_async(self, req):
        self._create_send_session(req)

    def _create_send_session(self, req):
        self._ever_had_send_session = True

    def check_context_transfer_status(self, ready_ids):
        if not self._ever_had_send_session:     # "flips together on every rank"
            return []
        return self._ctx_consensus(ready_ids)

    def _ctx_consensus(self, ids):
        if self._ctx_need_pp_sync:
            ids = self.dist.pp_allgather(ids)
        return ids
