"""Post-mortem: a hang that already happened, read from what its ranks left behind.

Design note. A hung job leaves, per rank, a PyTorch Flight Recorder dump (pickle or JSON, a
ring buffer of collective entries with Python frames) or trtsim's own call log
(``launch(..., log_dir=...)``). Both are read into one typed history per rank
(``history``): the calls as the guard's call records, with whether each returned, and where
the rank was when the file was written. ``align`` lines the histories up per process group
and sequence number -- never by position or by a per-process counter, since ring buffers
drop entries unevenly across ranks -- and says what survives. ``analysis`` applies the
guard's own rules to what is aligned (``guard.rules`` for members that disagree at one
sequence, ``guard.waitfor`` for ranks that can never proceed) and builds the report the
live guard builds (``calls.errors``). ``replay`` turns the histories into a scenario that
re-issues each rank's recorded calls on the inproc backend, where the guard reports the
same thing again, deterministically.

Nothing here imports torch or runs ranks: reading, aligning and judging are pure functions
over files and records; running a replay is the jobs wing's.
"""
