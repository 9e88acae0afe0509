"""The inproc backend: every rank of a launch in this process, one greenlet per rank.

Split the way a discrete-event kernel is: ``kernel`` only schedules (a seeded choice among
runnable ranks, block and wake); ``rendezvous`` (collectives) and ``mailbox`` (p2p) are
resources that match their own posts and wake whom they release; ``world`` composes them
with the clocks, the trace and the lockstep tracker and turns the state into reports.
"""
