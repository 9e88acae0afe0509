"""Ranks that another launcher started: torchrun's workers (``torchrun``) and an mpirun job's
processes (``mpirun``, ``mpirun_exits``), each its own rank over the job's TCP store, with
the store-backed ledger (``store_ledger``) in place of the spawned ranks' shared memory, each
rank's watch over it (``store_watch``) and the order in which the ranks leave a job a report
ended (``job_ending``). The rank side is the process backend's (``process.rank_start``,
``process.transport``).
"""
