"""Where each worker's stdout and stderr go in ``trtsim launch``: torchrun's ``--log-dir``,
``--redirects``, ``--tee`` and ``--local-ranks-filter``, with torchrun's meanings and layout
(torch/distributed/elastic/multiprocessing/api.py, ``DefaultLogsSpecs.reify``).

- ``--redirects`` / ``-r``: ``0`` none, ``1`` stdout, ``2`` stderr, ``3`` both, for every
  local rank, or a map of local ranks (``0:1,1:2``; a rank it leaves out: ``0``): the stream
  goes to the rank's log file instead of the console.
- ``--tee`` / ``-t``, the same values: the stream goes to the log file and to the console,
  each line after ``[default<local rank>]:`` (torchrun's prefix; its
  ``TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE`` is honoured, with ``${role_name}``, ``${rank}``,
  ``${local_rank}``).
- ``--log-dir DIR``: the base folder; each launch writes in a folder of its own,
  ``DIR/<run id>_<random>/attempt_0/<local rank>/{stdout,stderr}.log`` (a fresh temporary
  base folder when streams are redirected without ``--log-dir``, as torchrun does).
- ``--local-ranks-filter 0,2``: only those local ranks' streams reach the console; the others'
  files are still written.

This module is the plan (pure, but for ``make_run_dir``); ``worker_streams`` carries it out.
"""

from __future__ import annotations

import os
import re
import tempfile
import uuid
from dataclasses import dataclass
from string import Template

NONE, OUT, ERR, BOTH = 0, 1, 2, 3                 # torchrun's Std: a bit per stream
CONSOLE = ""                                      # a stream left on the console
ROLE = "default"                                  # torchrun's role name (--role is refused)
_VALUE = re.compile(r"^[0123]$")                  # torchrun's own two forms, as it checks them
_MAPPING = re.compile(r"^(\d:[0123],)*(\d:[0123])$")


def parse_std(flag: str, text: str, nproc: int) -> tuple[int, ...]:
    """``--redirects``/``--tee``'s value as one Std a local rank (torchrun's ``Std.from_str``
    then ``to_map``: a rank a map leaves out gets ``0``, one past the node's is ignored)."""
    if _VALUE.match(text):
        return (int(text),) * nproc
    if _MAPPING.match(text):
        given = {int(k): int(v) for k, v in (m.split(":") for m in text.split(","))}
        return tuple(given.get(r, NONE) for r in range(nproc))
    raise ValueError(f"{flag} {text!r}: 0 (none), 1 (stdout), 2 (stderr), 3 (both), or a "
                     "map of local ranks to them such as 0:1,1:2")


def parse_filter(text: str) -> frozenset[int] | None:
    """``--local-ranks-filter``'s value: the local ranks shown on the console (None: all)."""
    if not text:
        return None
    try:
        ranks = frozenset(int(r) for r in text.split(","))
    except ValueError:
        raise ValueError(f"--local-ranks-filter {text!r}: a comma-separated list of local "
                         "ranks, such as 0,1,2") from None
    return ranks


@dataclass(frozen=True)
class RankStreams:
    """One local rank's streams: ``stdout``/``stderr`` a log file's path, ``os.devnull``
    (filtered off the console) or ``CONSOLE``; ``tee_*``: its file is copied to the console,
    each line after ``prefix``; ``error_file``: torchrun's TORCHELASTIC_ERROR_FILE."""

    stdout: str = CONSOLE
    stderr: str = CONSOLE
    tee_stdout: bool = False
    tee_stderr: bool = False
    prefix: str = ""
    error_file: str = ""

    @property
    def files(self) -> tuple[str, ...]:
        """The log files this rank writes (made empty before the rank starts)."""
        return tuple(p for p in (self.stdout, self.stderr) if p not in (CONSOLE, os.devnull))


@dataclass(frozen=True)
class StreamFlags:
    """The flags as given (torchrun's defaults); validated on construction."""

    nproc: int
    log_dir: str | None = None
    redirects: str = "0"
    tee: str = "0"
    local_ranks_filter: str = ""

    def __post_init__(self) -> None:
        self.redirected()
        parse_filter(self.local_ranks_filter)
        if self.log_dir is not None and os.path.isfile(self.log_dir):
            raise ValueError(f"--log-dir {self.log_dir!r}: a file, not a folder")

    def redirected(self) -> tuple[int, ...]:
        """Each local rank's streams that go to a file (tee'd ones too, as torchrun has it)."""
        redirects = parse_std("--redirects", self.redirects, self.nproc)
        tee = parse_std("--tee", self.tee, self.nproc)
        return tuple(r | t for r, t in zip(redirects, tee))

    @property
    def inert(self) -> bool:
        """Nothing to do: every stream on the console and no folder asked for."""
        return (self.log_dir is None and not any(self.redirected())
                and parse_filter(self.local_ranks_filter) is None)


@dataclass(frozen=True)
class WorkerLogs:
    """Every local rank's streams (``ranks[local_rank]``) and the launch's attempt folder
    (None: nothing is written)."""

    attempt_dir: str | None
    ranks: tuple[RankStreams, ...]


def plan(flags: StreamFlags, attempt_dir: str | None, template: str | None) -> WorkerLogs:
    """torchrun's ``reify``: each local rank's files, console copies and prefix."""
    redirected = flags.redirected()
    tee = parse_std("--tee", flags.tee, flags.nproc)
    shown = parse_filter(flags.local_ranks_filter)
    ranks = []
    for r in range(flags.nproc):
        folder = os.path.join(attempt_dir, str(r)) if attempt_dir is not None else None
        paths = [os.path.join(folder, f"std{s}.log") if folder and redirected[r] & bit
                 else CONSOLE for s, bit in (("out", OUT), ("err", ERR))]
        tees = [bool(tee[r] & OUT), bool(tee[r] & ERR)]
        if shown is not None and r not in shown:          # off the console, files kept
            tees = [False, False]
            paths = [p or os.devnull for p in paths]
        prefix = (Template(template).safe_substitute(role_name=ROLE, rank=r, local_rank=r)
                  if template else f"[{ROLE}{r}]:")
        ranks.append(RankStreams(paths[0], paths[1], tees[0], tees[1], prefix,
                                 os.path.join(folder, "error.json") if folder else ""))
    return WorkerLogs(attempt_dir, tuple(ranks))


def make_run_dir(flags: StreamFlags) -> str | None:
    """The launch's ``attempt_0`` folder, made with a folder per local rank (None: none is
    needed); ``ValueError`` naming ``--log-dir`` when it cannot be made."""
    if flags.log_dir is None and not any(flags.redirected()):
        return None
    try:
        base = flags.log_dir or tempfile.mkdtemp(prefix="trtsim_logs_")
        os.makedirs(base, exist_ok=True)
        run = tempfile.mkdtemp(prefix=f"{uuid.uuid4()}_", dir=base)   # torchrun's run folder
        attempt = os.path.join(run, "attempt_0")
        for r in range(flags.nproc):
            os.makedirs(os.path.join(attempt, str(r)))
    except OSError as exc:
        raise ValueError(f"--log-dir {flags.log_dir!r}: the workers' logs cannot be written "
                         f"there ({exc.strerror or type(exc).__name__})") from None
    return attempt
