"""Which launch a rank's call log belongs to: the launch's id and start time.

Every rank of one launch writes the same id into its call log (and into the log's file
name), so the logs of several launches in one ``log_dir`` never overwrite or mix: a reader
takes one launch's set. Spawned ranks get the stamp the launcher made, with their launch's
configuration. Processes that start as ranks on their own (torchrun, mpirun) each build
their configuration, so they take the id their starter gives the whole job
(``TORCHELASTIC_RUN_ID``, PMIx's job namespace) and their own start time; a reader takes the
earliest start among a launch's logs.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from dataclasses import dataclass

_ID = re.compile(r"^[0-9A-Za-z.-]{1,64}$")
_JOB_IDS = ("TORCHELASTIC_RUN_ID", "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid")


@dataclass(frozen=True)
class LaunchStamp:
    """A launch's id (letters, digits, ``.`` and ``-``: it goes into file names) and its
    start (wall clock, ns since the epoch)."""

    id: str
    started_ns: int

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not _ID.match(self.id):
            raise ValueError(f"launch id {self.id!r}: 1 to 64 letters, digits, '.' or '-'")
        if not isinstance(self.started_ns, int) or isinstance(self.started_ns, bool) \
                or self.started_ns < 0:
            raise ValueError(f"launch start {self.started_ns!r}: ns since the epoch")

    @staticmethod
    def new() -> "LaunchStamp":
        """A fresh launch: its start time (UTC, to the second) and 24 random bits."""
        now = time.time_ns()
        when = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now // 10**9))
        return LaunchStamp(f"{when}-{secrets.token_hex(3)}", now)

    @staticmethod
    def of_job() -> "LaunchStamp":
        """The stamp of a process that is one rank of a job its starter runs: the job's id
        from the starter's environment (the same in every rank), or a fresh one."""
        for name in _JOB_IDS:
            value = os.environ.get(name)
            if value:
                ident = re.sub(r"[^0-9A-Za-z.-]", "-", value)[:64]   # prterun-vm-1@1
                return LaunchStamp(ident, time.time_ns())
        return LaunchStamp.new()
