import trtsim

def prog(dist):
    for it in range(3):
        dist.set_iteration(it)
        if not (dist.rank == 2 and it == 1):        # rank 2 skips one call
            dist.pp_allgather(dist.rank, label="gen_consensus")

if __name__ == "__main__":      # gloo/nccl spawn a process per rank, which re-imports this file
    trtsim.launch(prog, tp=2, pp=2)                 # backend="inproc" | "gloo" | "nccl"
