"""Jobs: the composition roots. A job builds every rank's runtime (KV cache, transceiver,
executor, MTP step) from a scenario, launches it on a backend and judges what came back.

``script_launch`` (an unmodified torchrun script on every rank: ``trtsim launch`` and
``python -m trtsim.torchrun``; ``script_job`` its rank program, ``rank_environ`` each inproc
rank's torchrun variables), ``run`` (a functional scenario -> RunResult), ``transfer_job``
and ``serving_job`` (the rank programs), ``census`` (collectives per iteration),
``control_plane`` and ``perf_run`` (the performance model fed with the control plane counted
on the real executor).
"""
