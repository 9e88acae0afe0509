"""Output paths are checked before a run starts: a ``--json`` or ``--trace`` that cannot be
written is bad input at once (exit 2, one line), not a refusal after the ranks have run.

The check asks the file system, not the permission bits: it creates and removes a file in the
folder the output goes to (root may write where the bits say no; a read-only mount refuses
root too). Writing itself stays where the command writes (whole, then renamed), so a folder
that goes away during the run is still reported then.
"""

from __future__ import annotations

import os
import tempfile
from typing import Sequence

from ..safe_write import OutputIsInput, refuse_input
from .output import BadInput


def check_output_file(flag: str, path: str, inputs: Sequence[str] = ()) -> None:
    """``path`` can be written as a file: it is not a folder, not one of ``inputs`` (the
    files the command reads), and its folder exists and takes a new file (the output is
    written beside it, then renamed over it). Raises ``BadInput`` naming the flag."""
    try:
        refuse_input(path, inputs)
    except OutputIsInput as exc:
        raise BadInput(f"{flag} {path}: {exc}") from None
    if os.path.isdir(path):
        raise BadInput(f"{flag} {path}: is a directory; give a file name")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        what = "is not a directory" if os.path.exists(folder) else "does not exist"
        raise BadInput(f"{flag} {path}: cannot write (the folder {folder} {what})")
    _probe(flag, path, folder)


def check_output_folder(flag: str, path: str) -> None:
    """``path`` is a folder that takes new files, or can be made: its nearest existing
    ancestor is a folder that takes new files."""
    probe = path
    while not os.path.exists(probe):
        parent = os.path.dirname(os.path.abspath(probe))
        if parent == os.path.abspath(probe):
            break
        probe = parent
    if not os.path.isdir(probe):
        raise BadInput(f"{flag} {path}: cannot write there ({probe} is not a directory)")
    _probe(flag, path, probe)


def _probe(flag: str, path: str, folder: str) -> None:
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=".trtsim-write-check-")
    except OSError as exc:
        raise BadInput(f"{flag} {path}: cannot write ({exc.strerror})") from None
    os.close(fd)
    os.unlink(name)
