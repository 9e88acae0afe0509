"""A rank whose thread cannot start (inproc, ranks as threads) is that rank's failure, reported,
and the launch ends: before, the hub waited for ever for a baton the thread never held.

The limit is real: the child process reserves 256 MiB of stack per thread under an address
space limit that leaves room for two or three, so ``pthread_create`` fails for a later rank.
"""

import os
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import resource, threading
    import torch
    import torch.distributed as dist
    import trtsim

    def prog(d):
        dist.init_process_group("gloo")
        dist.all_reduce(torch.ones(2))
        return 1

    def address_space():
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))

    threading.stack_size(256 << 20)
    limit = address_space() + (700 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        trtsim.launch(prog, tp=8, backend="inproc", intercept=("torch",), timeout=60)
        print("NO FAILURE")
    except trtsim.RankFailed as err:
        print("REPORT", err.rank, repr(err.traceback), err.summary)
""")


def test_a_rank_thread_that_cannot_start_is_that_ranks_failure():
    env = dict(os.environ, MALLOC_ARENA_MAX="1", OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                          text=True, timeout=240)   # a hang guard: the failure was a hang
    assert proc.returncode == 0, proc.stderr
    report = proc.stdout.strip().splitlines()[-1]
    assert report.startswith("REPORT "), proc.stdout + proc.stderr
    _, rank, traceback, summary = report.split(" ", 3)
    assert 1 <= int(rank) < 8            # rank 0's thread started: a later one failed
    assert summary.endswith("its thread could not start (can't start new thread): the "
                            "process's limits on threads or memory (ulimit -u, ulimit -v) were "
                            "reached"), summary
    assert traceback == "''"             # no frames of the rank program to show: none shown
