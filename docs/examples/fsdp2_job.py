# Written for torchrun; only the last two lines are trtsim's.
import torch, torch.distributed as dist
from torch.distributed.fsdp import fully_shard
import trtsim

def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    for layer in (model[0], model[2]):
        fully_shard(layer)                        # FSDP2: gradients averaged (ReduceOp.AVG)
    fully_shard(model)
    loss = model(torch.ones(4, 8) * dist.get_rank()).sum()
    if dist.get_rank() != 2:                      # rank 2 never runs the backward pass
        loss.backward()

if __name__ == "__main__":
    trtsim.launch(main, tp=4, intercept=("torch",))
