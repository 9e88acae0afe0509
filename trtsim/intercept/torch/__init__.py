"""Guarded stand-ins for torch.distributed's functions (``shim`` installs them): collectives
(``collectives``), point-to-point (``p2p``), functional collectives (``funcol``) and process
groups (``groups``: ``TorchRank``, one rank's view of the groups it made).
"""
