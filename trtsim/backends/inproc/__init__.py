"""The inproc backend: every rank of a launch in this process, one turn at a time.

Split the way a discrete-event kernel is: ``kernel`` only schedules (a seeded choice among
runnable ranks, block and wake) over its ``runners`` (greenlets, or OS threads holding a
baton where ranks wait in native code); ``rendezvous`` (collectives) and ``mailbox`` (p2p)
are resources that match their own posts and wake whom they release; ``world`` composes them
with the clocks, the trace and the lockstep tracker and turns the state into reports. The
``c10d_*`` modules make inproc groups real c10d ProcessGroups and stores for intercepted
torch.distributed; ``rank_local`` gives each rank its own module globals.
"""
