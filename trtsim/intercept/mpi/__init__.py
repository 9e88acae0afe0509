"""A stand-in ``mpi4py.MPI`` (``standin`` installs it): every name of mpi4py 4.1.2 works or
raises NotImplementedError naming itself (``names``). Communicators (``communicator``),
buffer specs and datatypes (``buffers``, ``datatypes``), collectives, p2p, requests and the
rank's MPI state (``run``: ``MPIRank``).
"""
