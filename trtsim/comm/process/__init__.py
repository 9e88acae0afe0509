"""The process backends (gloo, NCCL): one spawned process per rank on torch.distributed.

``launcher`` (the launcher side: spawn, watch, tear down), ``torchdist`` (the rank side: a
guarded transport), ``ledger`` (the shared-memory call ledger both read), ``monitor`` (the
launcher's deadlock monitor), ``torch_ops`` (the real p2p messages; collectives are in ``comm.torch_collectives``) and ``torchrun`` (the same
rank side when torchrun started the processes).
"""
