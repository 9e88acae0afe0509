"""A library a rank program imports only once it runs (never before a launch): a flip
controls its gates through the import hook of ``gates_in``."""


def step(dist, num_tokens):
    if num_tokens > 0:                                    # gate: lazy_step
        return dist.allreduce(num_tokens, label="lazy_tokens")
    return 0
