"""Disaggregated serving: the KV-cache transceiver V2 (sessions, consensus, the sticky-role
short-circuit), the asynchronous ring consensus and the transfer plan across TP/PP/ADP."""
