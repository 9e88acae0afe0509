"""The one rule for the paths a command writes, checked before a run starts (every subcommand
calls ``check_outputs``): each output given can be written, none is one of the command's
inputs, and no two name the same file. A path that breaks it is bad input at once (exit 2,
one line naming the option and the path), not a refusal after the ranks have run or a file
that silently replaced the evidence it was made from.

"One of the inputs" is the same file, by device and inode: a hard link or a symlink to an
input counts, whatever its name (``safe_write.same_file_as``). Two outputs are one when their
paths resolve to the same place (symlinks followed, ``.`` and ``..`` removed) or, where both
exist, are the same file.

Writability asks the file system, not the permission bits: the check creates and removes a
file in the folder the output goes to (root may write where the bits say no; a read-only
mount refuses root too). Writing itself stays where the command writes (``safe_write``: whole,
then renamed, inputs refused again), so a folder that goes away during the run is still
reported then.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Sequence

from ..safe_write import OutputIsInput, refuse_input
from .output import BadInput


@dataclass(frozen=True)
class Output:
    """One output of a command: the option that names it, its path (None: not given) and
    whether it is a folder the command writes files into."""

    flag: str
    path: str | None
    folder: bool = False


def check_outputs(outputs: Sequence[Output], inputs: Sequence[str] = ()) -> None:
    """Every given output of ``outputs`` can be written, is none of ``inputs`` (the files
    the command reads) and names a file no other output names; ``BadInput`` naming the first
    option and path that does not (see the module note)."""
    given = [o for o in outputs if o.path]
    for out in given:
        try:
            refuse_input(out.path, inputs)
        except OutputIsInput as exc:
            raise BadInput(f"{out.flag} {out.path}: {exc}") from None
    for i, out in enumerate(given):
        clash = next((o for o in given[:i] if _same_place(o.path, out.path)), None)
        if clash is not None:
            raise BadInput(f"{out.flag} {out.path}: is also the {clash.flag} output "
                           f"({clash.path}); give each output its own file")
    for out in given:
        (_writable_folder if out.folder else _writable_file)(out.flag, out.path)


def _same_place(a: str, b: str) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:                         # one of them does not exist yet
        return False


def _writable_file(flag: str, path: str) -> None:
    """A file can be written at ``path``: it is not a folder, and its folder exists and takes
    a new file (the output is written beside it, then renamed over it)."""
    if os.path.isdir(path):
        raise BadInput(f"{flag} {path}: is a directory; give a file name")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        what = "is not a directory" if os.path.exists(folder) else "does not exist"
        raise BadInput(f"{flag} {path}: cannot write (the folder {folder} {what})")
    _probe(flag, path, folder)


def _writable_folder(flag: str, path: str) -> None:
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
