"""Accelerators: peak rates, capacities and links of one GPU, and the achievable fraction of each.

Units throughout: FLOP/s, bytes, bytes/s, seconds. Every rate is per GPU. Tensor rates are
*dense* (no 2:4 structured sparsity: datasheets that quote sparse figures are halved). Link
bandwidths are *unidirectional* (one direction of one GPU's links); ``nvlink_bw_bidir`` gives the
marketing "bidirectional" figure. Where each figure comes from is in docs/COST_MODEL.md.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from types import MappingProxyType

DTYPES = ("bf16", "fp8", "fp4")

_TB = 1e12
_PF = 1e15
_GBIT = 1e9 / 8  # bytes/s in one Gb/s


def check_positive(owner: str, **values: float) -> None:
    """Raise ValueError naming the field and the value unless each value is a finite number > 0."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 \
                or value != value or value == float("inf"):
            raise ValueError(f"{owner}.{name}={value!r} must be a finite number > 0")


def check_fraction(owner: str, **values: float) -> None:
    """Raise ValueError unless each value lies in (0, 1]."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise ValueError(f"{owner}.{name}={value!r} must be in (0, 1]")


def check_dtype(owner: str, **values: str) -> None:
    for name, value in values.items():
        if value not in DTYPES:
            raise ValueError(f"{owner}.{name}={value!r} must be one of {', '.join(DTYPES)}")


@dataclass(frozen=True)
class Hardware:
    """One GPU and its links, as a roofline sees them."""

    name: str
    bf16_flops: float          # FLOP/s, dense bf16 tensor-core peak
    fp8_flops: float           # FLOP/s, dense fp8 tensor-core peak
    fp4_flops: float           # FLOP/s, dense fp4 peak; 0.0 = no fp4 tensor cores (runs at fp8)
    hbm_bytes: float           # bytes of HBM
    hbm_bw: float              # bytes/s, HBM peak
    nvlink_bw: float           # bytes/s per GPU per direction (unidirectional)
    nvlink_latency_s: float    # s, one ring step over NVLink (NCCL's hwLat)
    nvlink_domain: int         # GPUs reachable over NVLink (8 for HGX, 72 for NVL72)
    nic_bw: float              # bytes/s per GPU per direction (the GPU's scale-out NIC)
    nic_latency_s: float       # s, one step over the network
    collective_base_s: float   # s, fixed cost of one GPU collective (NCCL's baseLat)
    kernel_floor_s: float      # s, least GPU time of one kernel in a replayed CUDA graph
    hbm_eff: float = 0.80      # achievable fraction of hbm_bw (weight-streaming GEMM)
    bf16_eff: float = 0.80     # achievable fraction of bf16_flops (large GEMM)
    fp8_eff: float = 0.72      # achievable fraction of fp8_flops
    fp4_eff: float = 0.72      # achievable fraction of fp4_flops
    nvlink_eff: float = 0.80   # achievable fraction of nvlink_bw (collective bus bandwidth)
    nic_eff: float = 0.90      # achievable fraction of nic_bw (RDMA bulk transfer)

    def __post_init__(self) -> None:
        owner = f"Hardware({self.name!r})"
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"Hardware.name={self.name!r} must be a non-empty string")
        check_positive(owner, bf16_flops=self.bf16_flops, fp8_flops=self.fp8_flops,
                       hbm_bytes=self.hbm_bytes, hbm_bw=self.hbm_bw, nvlink_bw=self.nvlink_bw,
                       nvlink_latency_s=self.nvlink_latency_s, nic_bw=self.nic_bw,
                       nic_latency_s=self.nic_latency_s, collective_base_s=self.collective_base_s,
                       kernel_floor_s=self.kernel_floor_s)
        if isinstance(self.fp4_flops, bool) or not isinstance(self.fp4_flops, (int, float)) \
                or not 0 <= self.fp4_flops < float("inf"):
            raise ValueError(f"{owner}.fp4_flops={self.fp4_flops!r} must be >= 0 (0 = none)")
        if isinstance(self.nvlink_domain, bool) or not isinstance(self.nvlink_domain, int) \
                or self.nvlink_domain < 1:
            raise ValueError(f"{owner}.nvlink_domain={self.nvlink_domain!r} must be an int >= 1")
        check_fraction(owner, **{f.name: getattr(self, f.name) for f in fields(self)
                                 if f.name.endswith("_eff")})

    # -- rates -------------------------------------------------------------------------------
    def peak_flops(self, dtype: str) -> float:
        """Dense tensor peak (FLOP/s) for GEMMs in ``dtype``; fp4 falls back to fp8 without fp4."""
        check_dtype(f"Hardware({self.name!r})", dtype=dtype)
        if dtype == "fp4" and self.fp4_flops == 0:
            dtype = "fp8"
        return getattr(self, f"{dtype}_flops")

    def flops(self, dtype: str) -> float:
        """Achievable FLOP/s for GEMMs in ``dtype`` (peak times the achievable fraction)."""
        check_dtype(f"Hardware({self.name!r})", dtype=dtype)
        if dtype == "fp4" and self.fp4_flops == 0:
            dtype = "fp8"
        return getattr(self, f"{dtype}_flops") * getattr(self, f"{dtype}_eff")

    @property
    def hbm_rate(self) -> float:
        """Achievable HBM bytes/s."""
        return self.hbm_bw * self.hbm_eff

    @property
    def nvlink_rate(self) -> float:
        """Achievable NVLink bytes/s per direction."""
        return self.nvlink_bw * self.nvlink_eff

    @property
    def nic_rate(self) -> float:
        """Achievable NIC bytes/s per direction."""
        return self.nic_bw * self.nic_eff

    @property
    def nvlink_bw_bidir(self) -> float:
        """The datasheet's bidirectional NVLink figure (bytes/s): both directions added."""
        return 2 * self.nvlink_bw

    @property
    def ridge_intensity(self) -> float:
        """FLOP per HBM byte above which a bf16 GEMM is compute-bound (achievable rates)."""
        return self.flops("bf16") / self.hbm_rate


# Measured on one H200 SXM (2026-11-29, PyTorch 2.11, CUDA 13): 4.28 TB/s copy
# (read+write, 0.89 of 4.8), weight-streaming bf16 GEMM (m <= 128, 264 MB) 3.72-3.82 TB/s
# (0.78-0.80), 8192^3 bf16 GEMM 786 TFLOP/s (0.79), fp8 _scaled_mm 1431 TFLOP/s (0.72),
# 0.92-0.94 us per tiny kernel in a replayed CUDA graph. The other GPUs reuse these fractions.
_MEASURED = dict(hbm_eff=0.80, bf16_eff=0.80, fp8_eff=0.72, fp4_eff=0.72, kernel_floor_s=0.93e-6)
# NCCL's tuning model: Ring/LL base latency 6.6 us, 0.6 us a step over NVLink, 2.7 a network step.
_NCCL = dict(collective_base_s=6.6e-6, nvlink_latency_s=0.6e-6, nic_latency_s=2.7e-6)

H100_SXM = Hardware(
    name="H100_SXM", bf16_flops=989.5 * _TB, fp8_flops=1979.0 * _TB, fp4_flops=0.0,
    hbm_bytes=80e9, hbm_bw=3.35 * _TB, nvlink_bw=450e9, nvlink_domain=8,
    nic_bw=400 * _GBIT, **_NCCL, **_MEASURED)
H200_SXM = Hardware(
    name="H200_SXM", bf16_flops=989.5 * _TB, fp8_flops=1979.0 * _TB, fp4_flops=0.0,
    hbm_bytes=141e9, hbm_bw=4.8 * _TB, nvlink_bw=450e9, nvlink_domain=8,
    nic_bw=400 * _GBIT, **_NCCL, **_MEASURED)
B200 = Hardware(
    name="B200", bf16_flops=2.25 * _PF, fp8_flops=4.5 * _PF, fp4_flops=9.0 * _PF,
    hbm_bytes=180e9, hbm_bw=7.7 * _TB, nvlink_bw=900e9, nvlink_domain=8,
    nic_bw=400 * _GBIT, **_NCCL, **_MEASURED)
GB200 = Hardware(
    name="GB200", bf16_flops=2.5 * _PF, fp8_flops=5.0 * _PF, fp4_flops=10.0 * _PF,
    hbm_bytes=186e9, hbm_bw=8.0 * _TB, nvlink_bw=900e9, nvlink_domain=72,
    nic_bw=400 * _GBIT, **_NCCL, **_MEASURED)
GB300 = Hardware(
    name="GB300", bf16_flops=2.5 * _PF, fp8_flops=5.0 * _PF, fp4_flops=15.0 * _PF,
    hbm_bytes=288e9, hbm_bw=8.0 * _TB, nvlink_bw=900e9, nvlink_domain=72,
    nic_bw=800 * _GBIT, **_NCCL, **_MEASURED)

HARDWARE = MappingProxyType({h.name: h for h in (H100_SXM, H200_SXM, B200, GB200, GB300)})


def get_hardware(name: str) -> Hardware:
    """The catalogue entry called ``name`` (case-insensitive); ValueError lists the names."""
    for key, hw in HARDWARE.items():
        if key.lower() == str(name).lower():
            return hw
    raise ValueError(f"hardware={name!r} unknown; known: {', '.join(HARDWARE)}")
