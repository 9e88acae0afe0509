"""A library's helpers with gates of their own, imported before any launch: the flip controls
them only when the launch names this module in ``gates_in``."""


def _coordinate(dist, num_tokens):
    return dist.allreduce(num_tokens, label="lib_tokens")


def step(dist, num_tokens):
    if num_tokens > 0:                                    # gate: lib_step
        return _coordinate(dist, num_tokens)
    return 0


def chunked(dist, num_tokens, max_chunks=2):
    out = []
    for i in range(min(num_tokens, max_chunks)):          # gate: lib_chunks
        out.append(_coordinate(dist, i))
    return out


def budgeted(dist, budget, cost=2):
    done = 0
    while budget - done * cost >= cost and done < 2:      # gate: lib_budget
        _coordinate(dist, done)
        done += 1
    return done
