"""How soon each bug the realcode tests inject into vLLM's and SGLang's own code is reported,
per backend (tests/realcode: the frameworks' files from their wheels, through the stub hook).

Each case is the launch its test makes: vLLM's DP coordination with an idle rank skipping it
(vLLM #43547), a vLLM TP rank all-gathering where its peer all-reduces, SGLang's
DP-attention gather skipped by an idle rank (SGLang #25404), an SGLang rank broadcasting
where its peer all-reduces. Two figures per case, both upper bounds on the time from the
bug to its report: ``launch``, from ``trtsim.launch`` to the report it raises (gloo: the rank
processes starting and importing the framework included), and ``program``, from the moment
the last rank entered the program (each writes its clock to a file first) to the report.

    python benchmarks/bench_realcode_report.py [--repeat R] [--backends inproc gloo]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import trtsim  # noqa: E402
from tests.realcode import harness, sglang_programs, vllm_programs  # noqa: E402

# name -> (program, rank-local package, launch keywords): the realcode tests' bug cases
CASES = {
    "vllm dp skip": (vllm_programs.dp_steps, "vllm", dict(
        tp=2, attention_dp=True, args=([[3, 5], [0, 2], [4, 4]], True),
        iteration_marker=vllm_programs.DP_STEP)),
    "vllm wrong op": (vllm_programs.coordinator_loop, "vllm", dict(tp=2, args=(3, 1))),
    "sglang dp gather skip": (sglang_programs.coordinator_loop, "sglang", dict(
        tp=2, args=([[1, 2], [0, 1]], True))),
    "sglang wrong op": (sglang_programs.coordinator_loop, "sglang", dict(
        tp=2, args=([[1, 1]], False, 1))),
}


def stamped(dist, case: str, stamps: str, *args):
    """The case's rank program, once this rank has written its wall clock to ``stamps``."""
    with open(os.path.join(stamps, str(dist.global_rank)), "w") as f:
        f.write(repr(time.time()))
    return CASES[case][0](dist, *args)


def seconds_to_report(case: str, backend: str) -> tuple[float, float, str]:
    """(seconds from the launch to the report, from the last rank's start to the report,
    the report's kind)."""
    _prog, package, kwargs = CASES[case]
    with tempfile.TemporaryDirectory() as stamps:
        t0 = time.time()
        try:
            harness.launch(stamped, backend, (package,),
                           **dict(kwargs, args=(case, stamps, *kwargs["args"])))
        except trtsim.CollectiveError as err:
            t1 = time.time()
            last = max(float(open(os.path.join(stamps, n)).read()) for n in os.listdir(stamps))
            return t1 - t0, t1 - last, err.kind
    raise SystemExit(f"{case} on {backend}: no report (the bug went unseen)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--backends", nargs="+", default=list(harness.BACKENDS))
    args = ap.parse_args()
    print(f"# {platform.node()} {platform.machine()}, {os.cpu_count()} cores, python "
          f"{platform.python_version()}, torch {__import__('torch').__version__}; "
          f"{args.repeat} launches a case", flush=True)
    worst = 0.0
    for backend in args.backends:
        for case in CASES:
            runs = [seconds_to_report(case, backend) for _ in range(args.repeat)]
            launch, program = [r[0] for r in runs], [r[1] for r in runs]
            worst = max(worst, *program)
            print(f"FIGURE {backend:<6} {case:<22} {runs[0][2]:<9} launch median "
                  f"{statistics.median(launch):5.2f} s max {max(launch):5.2f} s; program "
                  f"median {statistics.median(program):5.2f} s max {max(program):5.2f} s",
                  flush=True)
    print(f"# slowest, from the last rank's start to the report: {worst:.2f} s", flush=True)


if __name__ == "__main__":
    main()
