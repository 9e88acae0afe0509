"""Guarded calls reached through many frames, as real frameworks reach theirs (coordinators,
communicators, wrappers, the executor loop). Module-level: spawned and torchrun ranks import
it."""

DEPTH = 60


def _descend(dist, depth: int, step: int, skip: bool):
    """``depth`` distinct frames (one function per level, so every frame is a purpose name),
    then one pp gather at the bottom, unless ``skip``."""
    if depth == 0:
        if not skip:
            return dist.pp_allgather((dist.rank, step))
        return None
    return LEVELS[depth - 1](dist, depth - 1, step, skip)


def _make_level(i: int):
    def level(dist, depth, step, skip):
        return _descend(dist, depth, step, skip)
    level.__name__ = level.__qualname__ = f"coordinator_level_{i:02d}_with_a_long_descriptive_name"
    return level


LEVELS = [_make_level(i) for i in range(DEPTH)]


def deep_gathers(dist):
    out = []
    for step in range(3):
        dist.set_iteration(step)
        out.append(_descend(dist, DEPTH, step, skip=False))
    return out


def deep_skip(dist):
    """PP stage 1 of TP rank 0 skips the gather of step 1, 60 frames down."""
    for step in range(3):
        dist.set_iteration(step)
        _descend(dist, DEPTH, step, skip=(dist.rank == 2 and step == 1))
