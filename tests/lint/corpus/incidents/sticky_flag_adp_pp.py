"""DESIGN 5.3's shape: the transceiver returns early from the status check while it never
opened a send session. The flag is set in the helper that opens a session for a request; under
attention DP with PP the stages of one pipeline get their first request at different
iterations, so one stage skips the pp_allgather of the consensus that its peers enter."""


class KvCacheTransceiver:
    def __init__(self, mapping, dist):
        self.mapping = mapping
        self.dist = dist
        self._ever_had_send_session = False
        self._ctx_need_tp_sync = mapping.tp_size > 1 and not mapping.enable_attention_dp
        self._ctx_need_pp_sync = mapping.pp_size > 1
        self._send_sessions = {}

    def respond_and_send_async(self, req):
        self._send_sessions[req.request_id] = self._create_send_session(req)

    def _create_send_session(self, req):
        self._ever_had_send_session = True
        return TxSession(req)

    def check_context_transfer_status(self, at_least_request_num):
        # The flag flips together on every rank.
        if not self._ever_had_send_session:  # GATE
            return [], []
        done = [rid for rid, s in self._send_sessions.items() if s.is_done()]
        ready = self._ctx_consensus(done)
        return ready, []

    def _ctx_consensus(self, local_ids):
        ready = local_ids
        if self._ctx_need_tp_sync:
            ready = _common(self.dist.tp_allgather(ready))
        if self._ctx_need_pp_sync:
            ready = _common(self.dist.pp_allgather(ready))
        return ready


class TxSession:
    def __init__(self, req):
        self.req = req

    def is_done(self):
        return self.req.sent


def _common(lists):
    return sorted(set.intersection(*(set(x) for x in lists)))
