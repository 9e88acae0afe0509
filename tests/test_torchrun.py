"""The same rank program runs under torchrun (env:// rendezvous), with the guard on; so does an
unmodified torch.distributed program with interception."""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.timeout(240)

JOB = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {root!r})
    import trtsim
    from tests import programs

    if __name__ == "__main__":
        prog = getattr(programs, sys.argv[1])
        res = trtsim.launch(prog, tp=2, pp=2, backend="gloo", timeout=60)
        if os.environ["RANK"] == "0":
            same = res == trtsim.launch(prog, tp=2, pp=2, backend="inproc")
            print("SAME-AS-INPROC" if same else "DIFFERENT")
""")


# An unmodified torch.distributed program written for torchrun (init_process_group("gloo"),
# env:// rendezvous), under torchrun inside launch(..., intercept=("torch",)).
INTERCEPT_JOB = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {root!r})
    import trtsim
    from tests import intercept_programs

    if __name__ == "__main__":
        prog = getattr(intercept_programs, sys.argv[1])
        res = trtsim.launch(prog, tp=2, pp=2, attention_dp=True, backend="gloo",
                            intercept=("torch",), timeout=60)
        print(f"RANK {{os.environ['RANK']}} RESULT {{res[int(os.environ['RANK'])]}}")
""")


def torchrun(tmp_path, program, job_text=JOB):
    job = tmp_path / "job.py"
    job.write_text(job_text.format(root=os.getcwd()))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "4",
           str(job), program]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=200, cwd=tmp_path)


def test_symmetric_program_under_torchrun(tmp_path):
    out = torchrun(tmp_path, "gathers")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "SAME-AS-INPROC" in out.stdout


def test_skip_is_reported_under_torchrun(tmp_path):
    out = torchrun(tmp_path, "skip_pp_allgather")
    assert out.returncode != 0
    assert "CollectiveMismatch: pp group [0, 2]" in out.stderr
    assert "rank 2 skipped a call" in out.stderr


def test_a_legal_torchrun_program_runs_its_real_collectives(tmp_path):
    out = torchrun(tmp_path, "legal_torch", INTERCEPT_JOB)
    assert out.returncode == 0, out.stderr[-3000:]
    # rank 1's ring neighbour is rank 0; the even subgroup gathers ranks 0 and 2
    assert "RANK 0 RESULT [3.0, 4.0, 5.0, 'cfg-0', [3.0, 3.0], [0.0, 2.0]]" in out.stdout
    assert "RANK 1 RESULT [3.0, 4.0, 5.0, 'cfg-0', [0.0, 0.0]]" in out.stdout


def test_a_cross_communicator_hang_under_torchrun_names_both_groups(tmp_path):
    out = torchrun(tmp_path, "warmup_torch", INTERCEPT_JOB)
    assert out.returncode != 0 and "RESULT" not in out.stdout
    report = out.stderr
    assert "CollectiveDeadlock: 4 ranks blocked" in report
    assert "rank 0: torch.all_gather_object on tp (torch:1)" in report
    assert "rank 1: torch.barrier on world (torch:world)" in report
    assert "likely: cross-group wait cycle" in report


# A script that made its own default group before launching: trtsim uses it and leaves it,
# and the environment it sets for the launch (SAFE_ENV) is put back as the script had it.
OWN_GROUP_JOB = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {root!r})
    import torch.distributed as tdist
    import trtsim
    from tests import programs

    if __name__ == "__main__":
        tdist.init_process_group("gloo")
        os.environ["NCCL_NVLS_ENABLE"] = "1"            # trtsim sets both for its launch
        os.environ.pop("NVSHMEM_DISABLE_NVLS", None)
        res = trtsim.launch(programs.gathers, tp=2, pp=2, backend=sys.argv[1], timeout=60)
        rank, env = os.environ["RANK"], os.environ.get   # one write a line: ranks share stdout
        os.write(1, f"RANK {{rank}} NOTES {{res.notes[:2]}}\\n".encode())
        os.write(1, f"RANK {{rank}} STILL {{tdist.is_initialized()}}\\n".encode())
        nvls = env("NCCL_NVLS_ENABLE"), env("NVSHMEM_DISABLE_NVLS")
        os.write(1, f"RANK {{rank}} ENV {{nvls[0]}} {{nvls[1]}}\\n".encode())
        # the script's group is the script's to end: plain torch left with a live gloo group
        # at exit aborts about one run in two ("terminate called without an active exception")
        tdist.destroy_process_group()
""")


def test_a_scripts_own_default_group_is_used_and_left_as_found(tmp_path):
    out = torchrun(tmp_path, "torchrun", OWN_GROUP_JOB)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.count("STILL True") == 4
    assert out.stdout.count("ENV 1 None") == 4          # the environment as it was found
    assert "torchrun: asked for (backend='torchrun')" in out.stdout
    assert "the script's default group" in out.stdout


def test_torchrun_is_detected_with_a_note(tmp_path):
    out = torchrun(tmp_path, "gloo", OWN_GROUP_JOB)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.count("torchrun: detected (TORCHELASTIC_RUN_ID is set)") == 4


def test_batch_system_variables_do_not_switch_a_gloo_launch(monkeypatch):
    import trtsim
    from tests import programs
    for key, value in dict(RANK="0", WORLD_SIZE="4", MASTER_ADDR="127.0.0.1",
                           MASTER_PORT="1").items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    res = trtsim.launch(programs.gathers, tp=2, backend="gloo", timeout=60)
    assert len(res) == 2 and not any(n.startswith("torchrun") for n in res.notes)


def test_backend_torchrun_outside_torchrun_is_bad_input(monkeypatch):
    import trtsim
    from tests import programs
    for key in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(ValueError, match="backend='torchrun' needs a torchrun"):
        trtsim.launch(programs.gathers, tp=2, backend="torchrun")
