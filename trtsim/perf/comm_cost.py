"""Communication costs: GPU collectives, point-to-point sends, KV transfer, host-object gathers.

Alpha-beta model. A collective over ``n`` ranks costs ``base + steps * step_latency + wire /
rate``, where ``wire`` is the bytes one rank sends on its busiest link (ring algorithms,
no NVLink SHARP) and ``rate`` the achievable unidirectional bandwidth of the link the group
uses: NVLink when the group fits in one NVLink domain, the NIC otherwise. Units: bytes, seconds.

    all_reduce      2(n-1) steps,  wire = 2(n-1)/n * bytes
    all_gather      (n-1) steps,   wire = (n-1)/n * n*bytes_per_rank
    reduce_scatter  (n-1) steps,   wire = (n-1)/n * bytes
    all_to_all      1 step,        wire = bytes one rank sends to the others (concurrent peers)
    send (p2p)      1 step,        wire = bytes

Host-object gathers (pickled objects over gloo, the control plane) use a separate model fitted
on the development machine: the virtual clock's price. The serving simulation prices host
collectives from a node-class measurement instead (``host_collectives``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .hardware import Hardware, check_positive


@dataclass(frozen=True)
class Link:
    """What one rank of a group sees: achievable bandwidth per direction and latencies."""

    rate: float        # bytes/s per direction, achievable
    step_s: float      # s per algorithm step
    base_s: float      # s fixed per collective

    def __post_init__(self) -> None:
        check_positive("Link", rate=self.rate, step_s=self.step_s, base_s=self.base_s)


def group_link(hw: Hardware, group_size: int) -> Link:
    """NVLink if ``group_size`` GPUs fit in one NVLink domain, else the NIC (the bottleneck)."""
    _check_ranks(group_size)
    if group_size <= hw.nvlink_domain:
        return Link(hw.nvlink_rate, hw.nvlink_latency_s, hw.collective_base_s)
    return Link(hw.nic_rate, hw.nic_latency_s, hw.collective_base_s)


def _check_ranks(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n_ranks={n!r} must be an int >= 1")


def _check_bytes(**values: float) -> None:
    for name, v in values.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < float("inf"):
            raise ValueError(f"{name}={v!r} must be a finite number >= 0")


def all_reduce_time(n: int, nbytes: float, link: Link) -> float:
    """Ring all-reduce of an ``nbytes`` buffer over ``n`` ranks (s): 2(n-1)/n * bytes / bw."""
    _check_ranks(n)
    _check_bytes(nbytes=nbytes)
    if n == 1:
        return 0.0
    return link.base_s + 2 * (n - 1) * link.step_s + 2 * (n - 1) / n * nbytes / link.rate


def all_gather_time(n: int, bytes_per_rank: float, link: Link) -> float:
    """Ring all-gather where each rank contributes ``bytes_per_rank`` (s)."""
    _check_ranks(n)
    _check_bytes(bytes_per_rank=bytes_per_rank)
    if n == 1:
        return 0.0
    return link.base_s + (n - 1) * link.step_s + (n - 1) * bytes_per_rank / link.rate


def reduce_scatter_time(n: int, nbytes: float, link: Link) -> float:
    """Ring reduce-scatter of an ``nbytes`` buffer (each rank ends with nbytes/n) (s)."""
    _check_ranks(n)
    _check_bytes(nbytes=nbytes)
    if n == 1:
        return 0.0
    return link.base_s + (n - 1) * link.step_s + (n - 1) / n * nbytes / link.rate


def all_to_all_time(n: int, bytes_sent_per_rank: float, link: Link) -> float:
    """All-to-all where each rank sends ``bytes_sent_per_rank`` in total to its peers (s)."""
    _check_ranks(n)
    _check_bytes(bytes_sent_per_rank=bytes_sent_per_rank)
    if n == 1:
        return 0.0
    return link.base_s + link.step_s + bytes_sent_per_rank / link.rate


def send_time(nbytes: float, link: Link) -> float:
    """One point-to-point send (PP activations to the next stage) (s)."""
    _check_bytes(nbytes=nbytes)
    return link.base_s + link.step_s + nbytes / link.rate


def expected_remote_ranks(num_experts: int, top_k: int, ep: int) -> float:
    """Expected distinct *other* EP ranks one token's top-k experts live on (uniform routing).

    Experts are spread evenly, E/ep per rank; a token's k distinct experts miss a given rank's
    E/ep experts with probability C(E - E/ep, k) / C(E, k).
    """
    if ep <= 1:
        return 0.0
    per_rank = num_experts / ep
    miss = 1.0
    for i in range(top_k):
        miss *= max(0.0, (num_experts - per_rank - i)) / (num_experts - i)
    return (ep - 1) * (1.0 - miss)


def moe_dispatch_combine_time(tokens_per_rank: float, hidden: int, act_bytes: float,
                              num_experts: int, top_k: int, ep: int, link: Link) -> float:
    """EP all-to-all of one MoE layer: dispatch tokens to their experts' ranks and combine back.

    Each token is sent once to every remote rank holding one of its experts (dispatch) and the
    partial outputs come back the same way (combine): two all-to-alls of equal volume.
    """
    _check_bytes(tokens_per_rank=tokens_per_rank)
    vol = tokens_per_rank * expected_remote_ranks(num_experts, top_k, ep) * hidden * act_bytes
    return 2 * all_to_all_time(ep, vol, link)


def kv_transfer_time(nbytes_per_link: float, num_transfers: int, link_rate: float,
                     link_latency_s: float, per_transfer_overhead_s: float) -> float:
    """KV-cache move ctx -> gen: per-transfer latency and host overhead, then bytes at line rate.

    ``nbytes_per_link`` is the busiest sender's or receiver's share; ``num_transfers`` the
    requests moved together (their fixed costs add up, their bytes share the link).
    """
    _check_bytes(nbytes_per_link=nbytes_per_link, per_transfer_overhead_s=per_transfer_overhead_s)
    _check_ranks(num_transfers)
    check_positive("kv_transfer_time", link_rate=link_rate, link_latency_s=link_latency_s)
    return num_transfers * (link_latency_s + per_transfer_overhead_s) + nbytes_per_link / link_rate


# -- host-object collectives (control plane) -------------------------------------------------
@dataclass(frozen=True)
class HostGatherParams:
    """Pickled host-object all-gather among n ranks of B bytes each (seconds):

        fixed_s + per_rank_s * n + per_excess_rank_s * max(0, n - cores) + per_byte_s * n * B

    ``cores`` is the CPU count of the host the ranks share: ranks beyond it time-share cores
    (the measuring machine had 2); set it to n or more for ranks with a core each.
    """

    fixed_s: float            # s per collective
    per_rank_s: float         # s per member rank
    per_excess_rank_s: float  # s per rank beyond ``cores``
    per_byte_s: float         # s per byte received (n * B bytes reach every rank)
    cores: int = 2
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("fixed_s", "per_rank_s", "per_excess_rank_s", "per_byte_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1:
                raise ValueError(f"HostGatherParams.{name}={v!r} must be in [0, 1) seconds")
        if isinstance(self.cores, bool) or not isinstance(self.cores, int) or self.cores < 1:
            raise ValueError(f"HostGatherParams.cores={self.cores!r} must be an int >= 1")

    def __call__(self, n_ranks: int, payload_bytes: float) -> float:
        """The price of one gather: these parameters as a virtual clock's host price."""
        return host_gather_cost(n_ranks, payload_bytes, self)


# Fitted by benchmarks/bench_host_gather.py as of commit 7651b56 (gloo, 2/4/8 spawned processes,
# 16 B - 64 KB) on the 2-core development VM on 2026-11-29; docs/COST_MODEL.md 6 has the run and
# its fit error. The virtual clock of functional runs prices host gathers with it.
HOST_GATHER_MEASURED = HostGatherParams(
    fixed_s=0.0, per_rank_s=711.7e-6, per_excess_rank_s=4064.3e-6, per_byte_s=2.469e-9, cores=2,
    source="benchmarks/bench_host_gather.py, 2-core x86_64 VM, torch 2.13 gloo, 2026-11-29")


def host_gather_cost(n_ranks: int, payload_bytes: float,
                     params: HostGatherParams = HOST_GATHER_MEASURED) -> float:
    """Seconds for one pickled host-object all-gather among ``n_ranks`` (0 for a group of one)."""
    _check_ranks(n_ranks)
    _check_bytes(payload_bytes=payload_bytes)
    if n_ranks == 1:
        return 0.0
    p = params
    return p.fixed_s + p.per_rank_s * n_ranks + p.per_excess_rank_s * max(0, n_ranks - p.cores) \
        + p.per_byte_s * n_ranks * payload_bytes


@dataclass(frozen=True)
class TransceiverOverhead:
    """Host cost of one KV-cache transceiver runtime (TRT-LLM ``transceiver_runtime``)."""

    name: str
    prepare_s: float     # s per request transfer: building block lists and descriptors
    poll_s: float        # s per open request per executor iteration: status poll, bookkeeping

    def __post_init__(self) -> None:
        if self.name not in ("python", "cpp"):
            raise ValueError(f"TransceiverOverhead.name={self.name!r} must be 'python' or 'cpp'")
        for name in ("prepare_s", "poll_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1:
                raise ValueError(f"TransceiverOverhead.{name}={v!r} must be in [0, 1) seconds")


# Python: prepare from TensorRT-LLM PR #12273 (avg prepare_args 0.424 ms after the host-perf
# work, 10.3 ms before); poll: 1.02 us measured by benchmarks/bench_host_gather.py's loop.
PYTHON_TRANSCEIVER = TransceiverOverhead("python", prepare_s=0.424e-3, poll_s=1.0e-6)
# C++: no public figure; estimates (see docs/COST_MODEL.md).
CPP_TRANSCEIVER = TransceiverOverhead("cpp", prepare_s=0.1e-3, poll_s=0.05e-6)


