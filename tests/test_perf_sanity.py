"""Import of TRT-LLM's disaggregated perf-sanity YAML files into perf scenarios."""

import glob
import subprocess
import sys

import pytest
import yaml

from trtsim.scenario.functional import ScenarioError
from trtsim.scenario.perf import load_perf
from trtsim.scenario.perf_sanity import import_perf_sanity, perf_mapping

DIR = "tests/data/perf_sanity"


def test_v4_pro_file_of_incident_5_3():
    scen, notes = import_perf_sanity(f"{DIR}/gb300_deepseek-v4-pro-fp4_8k1k_con8_ctx1_dep4_gen4_tep8_eplb0_mtp3_ccb-NIXL.yaml")
    assert (scen["hardware"], scen["model"]) == ("GB300", "V4-Pro")
    assert scen["ctx"] == {"servers": 1, "tp": 4, "pp": 1, "ep": 4, "attention_dp": True,
                           "max_batch_size": 2, "max_num_tokens": 8192,
                           "disable_overlap_scheduler": False}
    # TRT-LLM's benchmark script: the level per generation server, concurrency x multi_round
    # prompts in one run
    assert scen["benchmark"]["concurrency"] == 8 * 4
    assert scen["benchmark"]["num_prompts"] == 8 * 4 * 10
    assert scen["gen"]["servers"] == 4 and scen["gen"]["tp"] == 8 and not scen["gen"]["attention_dp"]
    assert scen["benchmark"]["input_length"] == 7456 and scen["benchmark"]["output_length"] == 923
    assert scen["benchmark"]["stream_interval"] == 100 and "multi_round" not in scen["benchmark"]
    # this copy of the file forces no acceptance: none is sourced, and the scenario says so
    assert scen["speculative"] == {"max_draft_len": 3}
    assert any("forces no acceptance" in n and "acceptance_length" in n for n in notes)
    with pytest.raises(ScenarioError, match="needs the acceptance's source"):
        load_perf(scen)
    assert scen["transceiver"]["runtime"] == "python"
    # an imported file follows the newest stored TRT-LLM code, and says so
    assert scen["executor"] == {"version": "coordinator"} and scen["transceiver"]["version"] == "E"
    assert any("executor.version coordinator" in n for n in notes)
    assert any("kv_cache_config" in n for n in notes) and any("environment" in n for n in notes)
    load_perf(scen, {"speculative.acceptance_length": 2.654})      # a valid perf scenario


def test_the_workers_forced_acceptance_is_the_source():
    """TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS in the workers' environment, as the 5.2 and
    5.3 files set it: every step accepts that many drafts (capped at K)."""
    path = f"{DIR}/gb300_deepseek-v4-pro-fp4_8k1k_con8_ctx1_dep4_gen4_tep8_eplb0_mtp3_ccb-NIXL.yaml"
    with open(path) as f:
        raw = yaml.safe_load(f)
    raw["environment"]["worker_env_var"] = ("TLLM_LOG_LEVEL=INFO TRTLLM_WORKER_DISABLE_GC=1 "
                                            "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=3")
    scen, notes = perf_mapping(raw, path)
    assert scen["speculative"] == {"max_draft_len": 3, "force_num_accepted_tokens": 3.0}
    assert any("force 3 accepted drafts" in n for n in notes)
    assert load_perf(scen).config.acceptance == (1.0, 1.0, 1.0)


def test_gpu_and_model_from_the_file_name_and_nextn_layers():
    scen, notes = import_perf_sanity(f"{DIR}/gb200_deepseek-r1-fp4_1k1k_con16_ctx2_dep4_gen1_dep8_eplb0_mtp1_ccb-UCX.yaml")
    assert (scen["hardware"], scen["model"]) == ("GB200", "DeepSeek-R1-FP4")
    assert scen["benchmark"]["concurrency"] == 16
    assert any("[16, 32]" in n for n in notes)
    assert scen["speculative"]["max_draft_len"] == 1 and scen["ctx"]["servers"] == 2
    assert scen["transceiver"]["runtime"] == "cpp"


def test_disable_overlap_scheduler_is_read_per_role():
    path = f"{DIR}/gb200_deepseek-r1-fp4_1k1k_con16_ctx2_dep4_gen1_dep8_eplb0_mtp1_ccb-UCX.yaml"
    with open(path) as f:
        raw = yaml.safe_load(f)
    raw["worker_config"]["ctx"]["disable_overlap_scheduler"] = True
    scen, notes = perf_mapping(raw, path)
    assert scen["ctx"]["disable_overlap_scheduler"] is True
    assert scen["gen"]["disable_overlap_scheduler"] is False
    assert not any("disable_overlap_scheduler" in n for n in notes)
    assert load_perf(scen, {"speculative.acceptance_length": 1.8}).config.ctx \
        .disable_overlap_scheduler is True


def test_no_speculation_and_defaults():
    scen, _ = import_perf_sanity(f"{DIR}/b200_gpt-oss-120b_1k1k_con64_ctx1_tp4_gen1_tp4_eplb0_mtp0_ccb-DEFAULT.yaml")
    assert (scen["hardware"], scen["model"]) == ("B200", "gpt-oss-120b")
    assert scen["speculative"] == {"max_draft_len": 0}
    assert scen["benchmark"]["concurrency"] == 64


def test_missing_required_field_is_an_error_naming_it():
    with pytest.raises(ScenarioError, match=r"broken_missing_output_length.yaml: "
                                            r"benchmark.output_length: missing"):
        import_perf_sanity(f"{DIR}/broken_missing_output_length.yaml")


def test_every_sample_file_imports_or_fails_cleanly():
    for path in glob.glob(f"{DIR}/*.yaml"):
        try:
            import_perf_sanity(path)
        except ScenarioError as exc:
            assert "missing" in str(exc)


def test_trtsim_run_takes_a_perf_sanity_file():
    path = f"{DIR}/b200_gpt-oss-120b_1k1k_con64_ctx1_tp4_gen1_tp4_eplb0_mtp0_ccb-DEFAULT.yaml"
    out = subprocess.run([sys.executable, "-m", "trtsim", "run", path, "--set",
                          "benchmark.num_prompts=64"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "output_throughput" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "trtsim", "run",
                          f"{DIR}/broken_missing_output_length.yaml"], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and "benchmark.output_length: missing" in bad.stderr
