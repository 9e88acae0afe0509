# Written for torchrun; only the last two lines are trtsim's.
import torch, torch.distributed as dist
import trtsim

def execute_model(step):                          # zero tokens: return before the all-reduce
    tokens = 0 if (dist.get_rank() == 1 and step == 1) else 4
    if tokens:
        dist.all_reduce(torch.tensor([tokens]))

def main():
    dist.init_process_group("gloo")
    for step in range(4):
        execute_model(step)

if __name__ == "__main__":
    trtsim.launch(main, tp=2, attention_dp=True, backend="gloo", intercept=("torch",),
                  iteration_marker="dp_job:execute_model")
