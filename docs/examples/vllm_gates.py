"""vLLM's DP coordination with a balanced schedule (no step without tokens, so no report):
observe lists the gate that leaves the DP all-reduce out on a zero-token step, and flip
proves it with the report of vLLM #43547."""
import trtsim
from tests.realcode import vllm_programs

BALANCED = [[3, 5], [2, 2], [4, 4]]          # tokens per step, per DP rank: never zero

if __name__ == "__main__":
    for gates in ("observe", "flip"):
        results = trtsim.launch(vllm_programs.dp_steps, tp=2, attention_dp=True,
                                args=(BALANCED, True), intercept=("torch",),
                                rank_local=("vllm",), iteration_marker=vllm_programs.DP_STEP,
                                gates=gates, gates_in=("vllm",))
        for gate in results.latent:
            print(gate.line() if gate.flip is None else gate.flip)
