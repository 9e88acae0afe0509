# An unmodified torchrun script: `torchrun --nproc-per-node 4 train.py` hangs in step 3.
import os
import torch
import torch.distributed as dist

def train_step(step, batch):
    grad = torch.ones(1) * len(batch)
    if batch:                                     # an empty shard skips the gradient sync
        dist.all_reduce(grad)

def main():
    dist.init_process_group("gloo")
    rank = int(os.environ["RANK"])
    for step in range(4):
        batch = [] if (rank == 3 and step == 2) else [step, rank]
        train_step(step, batch)
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
