"""The process backends (gloo, NCCL): one spawned process per rank on torch.distributed.

The launcher side: ``spawn`` (start, watch, tear down), ``monitor`` (the deadlock monitor),
``culprit`` (which rank a failure is blamed on), ``interrupts``, ``lifeline``, ``main_guard``,
``rank_group`` and ``store``. The rank side: ``rank_main`` (a spawned rank's entry point),
``rank_start`` (the start-up every process rank shares, torchrun's and mpirun's too),
``transport`` (the guarded path to torch.distributed), ``torch_ops`` (real p2p messages),
``aborts`` and ``safe_env``. Between them: ``rank_messages`` (what a rank tells its
launcher over the result queue), ``ledger`` (the shared-memory call ledger,
``ledger_contract`` its Protocol, ``record_codec`` and ``row_mutex`` its rows), and
``call_log_writer`` / ``logged`` (each rank's call log for ``trtsim analyze``).
"""
