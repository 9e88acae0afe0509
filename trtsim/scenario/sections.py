"""Every section of both scenario kinds and the dataclass it builds: the one list that
``trtsim schema`` and docs/SCENARIOS.md are printed from (``schema.describe`` of each)."""

from __future__ import annotations

from ..disagg.transceiver_config import TransceiverConfig
from ..executor.config import ExecutorConfig, ServingWorkload
from ..layout.parallel import ParallelLayout
from ..perf.serving_sim import BenchmarkConfig, InstanceConfig
from ..spec.config import SpecConfig
from ..state.kv_cache import KvCacheConfig
from .functional import Deployed, Scenario, TransferWorkload
from .perf import PerfScenario, PerfSpeculative, PerfWorker
from .schema import describe

# (scenario kind, section as a file spells it, dataclass); "" is the file's top level.
# A dataclass field that a scenario sets itself is no key of the file (OMIT).
OMIT = {("functional", "model"): {"num_layers"}}
SECTIONS = (
    ("functional", "", Scenario),
    ("functional", "model", KvCacheConfig),
    ("functional", "deployment", Deployed),
    ("functional", "deployment.ctx, deployment.gen", ParallelLayout),
    ("functional", "workload (kind: transfer)", TransferWorkload),
    ("functional", "workload (kind: serving)", ServingWorkload),
    ("functional", "transceiver", TransceiverConfig),
    ("functional", "executor", ExecutorConfig),
    ("functional", "speculative", SpecConfig),
    ("perf", "", PerfScenario),
    ("perf", "ctx, gen", InstanceConfig),
    ("perf", "benchmark", BenchmarkConfig),
    ("perf", "transceiver", TransceiverConfig),
    ("perf", "speculative", PerfSpeculative),
    ("perf", "worker", PerfWorker),
)


def schema_rows() -> list[tuple[str, str, list[tuple[str, str, str, str]]]]:
    """(kind, section, [(key, type, default, help), ...]) for every section."""
    return [(kind, name, [r for r in describe(cls) if r[0] not in OMIT.get((kind, name), ())])
            for kind, name, cls in SECTIONS]
