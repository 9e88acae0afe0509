"""A rank that ends itself while another of its threads writes its call log ends after that
write: the log is whole and no temporary file is left. (Rank 0 of an mpirun job: its monitor
finds the deadlock and ends the rank while the main thread, hit by the same report, writes
the log; ``os._exit`` in the middle of that write left ``.<log>.<hex>.tmp`` behind.) A rank
that waits to be ended has written its last log: SIGTERM ends it without another write."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.timeout(180)

# The main thread's write is held midway -- its temporary file open, half written -- by a
# header value that the JSON writer turns into text (``str``); it goes on once the other
# thread's exit path, run meanwhile, has started (``end_process``, the one way out). Where the
# exit path does not wait for the write in flight, the process ends with the write still held.
RANK = textwrap.dedent("""
    import os, sys, threading
    from trtsim.backends.process.call_log_writer import CallLogger
    from trtsim.backends.external.mpirun_exits import leave, stay

    writing, proceed = threading.Event(), threading.Event()

    class HeldWrite:
        def __init__(self):
            self.calls = 0

        def __str__(self):
            self.calls += 1
            if self.calls == 1:          # the main thread's write: midway, held
                writing.set()
                proceed.wait()
            return "whole"

    logger = CallLogger(os.path.join(sys.argv[1], "rank0.json"), {"rank": 0, "end": HeldWrite()},
                        None)

    def exit_path_started(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "end_process":
            proceed.set()

    def monitor():
        assert writing.wait(120)
        sys.setprofile(exit_path_started)
        leave("REPORT: deadlock", logger)

    threading.Thread(target=monitor, daemon=True).start()
    stay(logger, 120)                    # the main thread: writes its log, then waits
""")


def test_the_exit_path_waits_for_the_write_in_flight(tmp_path):
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {**os.environ, "PYTHONPATH": ROOT}           # this checkout's trtsim
    done = subprocess.run([sys.executable, str(script), str(logs)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=150)
    assert done.returncode == 1, done.stderr[-3000:]            # the report's exit status
    assert done.stderr.count("REPORT: deadlock") == 1
    assert sorted(os.listdir(logs)) == ["rank0.json"]           # no temporary file left
    with open(logs / "rank0.json") as f:
        log = json.load(f)
    assert log["end"] == "whole" and log["written_on"] == "exit" and log["rank"] == 0


# A rank that another's report ends (``stay``) writes its log, then waits for mpirun's SIGTERM.
# Each write is announced; the SIGTERM goes once the first is done.
STAYING = textwrap.dedent("""
    import os, sys
    from trtsim.backends.process.call_log_writer import CallLogger
    from trtsim.backends.external.mpirun_exits import stay

    class Announced(CallLogger):
        def write(self, written_on):
            super().write(written_on)
            print("WROTE", written_on, flush=True)

    stay(Announced(os.path.join(sys.argv[1], "rank1.json"), {"rank": 1}, None), 120)
""")


def test_sigterm_after_the_last_log_ends_the_rank_without_writing_again(tmp_path):
    """mpirun sends SIGKILL a second after SIGTERM: a write the SIGTERM started then could be
    cut in half on a loaded machine, leaving its temporary file (seen once in five loaded
    suite runs). The log ``stay`` wrote is the last."""
    script = tmp_path / "rank.py"
    script.write_text(STAYING)
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {**os.environ, "PYTHONPATH": ROOT}
    rank = subprocess.Popen([sys.executable, str(script), str(logs)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert rank.stdout.readline() == "WROTE exit\n"
        rank.send_signal(signal.SIGTERM)
        _, err = rank.communicate(timeout=150)
    finally:
        rank.kill()
    assert rank.returncode == -signal.SIGTERM, err[-3000:]
    assert sorted(os.listdir(logs)) == ["rank1.json"]
    with open(logs / "rank1.json") as f:
        assert json.load(f)["written_on"] == "exit"
