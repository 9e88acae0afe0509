"""Run-time state shared by the executor and the transceiver: requests and the paged KV cache."""
