"""vLLM's own DP coordination, vllm==0.33.0 from its wheel (tests/realcode fetches it and
stubs its heavy imports): DP rank 0 has no tokens at step 1 and skips the all-reduce."""
import trtsim
from tests.realcode import vllm_programs

SCHEDULE = [[3, 5], [0, 2], [4, 4]]          # tokens per step, per DP rank

if __name__ == "__main__":
    trtsim.launch(vllm_programs.dp_steps, tp=2, attention_dp=True, args=(SCHEDULE, True),
                  intercept=("torch",), rank_local=("vllm",),
                  iteration_marker=vllm_programs.DP_STEP)
