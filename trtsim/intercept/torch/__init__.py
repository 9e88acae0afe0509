"""Guarded stand-ins for torch.distributed's functions (``shim`` installs them): collectives
(``collectives``, through the one guarded path of ``guarded``), point-to-point (``p2p``), the
functional collectives' ops (``funcol``), the collectives other torch modules imported by
name (``by_name``), group and query functions (``group_functions``) and process groups
(``groups``: ``TorchRank``, one rank's view of the groups it made).
"""
