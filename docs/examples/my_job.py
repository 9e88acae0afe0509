import trtsim

class MyTransceiver:                                      # written for TRT-LLM's Distributed
    def __init__(self, mapping, dist):
        self.dist, self.ever_sent = dist, False
        self.name = dist.broadcast("instance-0" if dist.rank == 0 else None, 0)

    def check_context_transfer_status(self, at_least):
        if not self.ever_sent:                            # the sticky-role short-circuit
            return [], []
        return self.dist.pp_allgather([]), []             # the PP consensus

class Executor:
    def __init__(self, dist):
        self.dist, self.tc = dist, MyTransceiver(dist.mapping, dist)

    def step(self, it):                                   # one executor iteration
        if self.dist.dp_rank == 0 and it == 1 + self.dist.pp_rank:
            self.tc.ever_sent = True                      # stage 1 sends one iteration late
        self.tc.check_context_transfer_status(0)

def rank(dist):
    ex = Executor(dist)
    for it in range(3):
        ex.step(it)

if __name__ == "__main__":                                # spawned ranks re-import this file
    trtsim.launch(rank, tp=2, pp=2, attention_dp=True, backend="gloo",
                  iteration_marker="my_job:Executor.step")
