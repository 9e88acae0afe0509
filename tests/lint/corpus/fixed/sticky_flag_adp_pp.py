"""DESIGN 5.3's sticky flag, fixed as TensorRT-LLM fixed it: the early return also requires
that no PP consensus is needed, so it can skip only gathers that would not run."""


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
        # Skip only where no consensus gather would run: no PP gather (pp == 1), and no TP
        # gather but without attention DP, where every TP rank gets the same requests.
        if not self._ever_had_send_session and not self._ctx_need_pp_sync:
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
