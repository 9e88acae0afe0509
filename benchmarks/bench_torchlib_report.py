"""How soon a backward-only skip is reported when the collectives come from PyTorch's own
libraries, per backend: an FSDP2 step (``fully_shard``, its defaults) and a chain of
differentiable functional collectives, each on 4 ranks, where rank 2 runs the forward pass
and never calls ``backward()``. The others wait in the backward pass's reduce-scatter (FSDP2)
or the adjoint all-to-all (functional collectives): before the backward collectives were
guarded, gloo gave a 60 s timeout here. Two figures per case, both upper bounds on the time
from the bug to its report: ``launch``, from ``trtsim.launch`` to the report it raises (gloo:
the rank processes starting included), and ``program``, from the moment the last rank
entered the program (each writes its clock to a file first) to the report.

    python benchmarks/bench_torchlib_report.py [--repeat R] [--backends inproc gloo]
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
from tests import torchlib_programs  # noqa: E402

CASES = {"fsdp2 backward skip": ("fsdp2", ("backward", None)),
         "funcol backward skip": ("funcol_autograd", ("backward",))}


def stamped(dist, case: str, stamps: str):
    """The case's program, once this rank has written its wall clock to ``stamps``."""
    with open(os.path.join(stamps, str(dist.global_rank)), "w") as f:
        f.write(repr(time.time()))
    name, args = CASES[case]
    return getattr(torchlib_programs, name)(*args)


def seconds_to_report(case: str, backend: str) -> tuple[float, float, str]:
    """(seconds from the launch to the report, from the last rank's start to it, its kind)."""
    with tempfile.TemporaryDirectory() as stamps:
        t0 = time.time()
        try:
            trtsim.launch(stamped, tp=4, backend=backend, intercept=("torch",),
                          args=(case, stamps), timeout=60)
        except (trtsim.CollectiveMismatch, trtsim.CollectiveDeadlock) as err:
            t1 = time.time()
            last = max(float(open(os.path.join(stamps, n)).read()) for n in os.listdir(stamps))
            return t1 - t0, t1 - last, err.kind
    raise SystemExit(f"{case} on {backend}: no report (the skip went unseen)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--backends", nargs="+", default=["inproc", "gloo"])
    args = ap.parse_args()
    print(f"# {platform.node()} {platform.machine()}, {os.cpu_count()} cores, python "
          f"{platform.python_version()}, torch {__import__('torch').__version__}; "
          f"{args.repeat} launches a case", flush=True)
    for backend in args.backends:
        for case in CASES:
            runs = [seconds_to_report(case, backend) for _ in range(args.repeat)]
            launch, program = [r[0] for r in runs], [r[1] for r in runs]
            print(f"FIGURE {backend:<6} {case:<21} {runs[0][2]:<9} launch median "
                  f"{statistics.median(launch):5.2f} s max {max(launch):5.2f} s; program "
                  f"median {statistics.median(program):5.2f} s max {max(program):5.2f} s",
                  flush=True)


if __name__ == "__main__":
    main()
