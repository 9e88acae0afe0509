"""Writing an output file safely: the one helper every file trtsim writes for a user goes through.

A fixed ``OUT.tmp`` beside the target can be planted by anyone who can write the folder: a
symlink there makes the write land in whatever file the link names. So the temporary is a
fresh, unguessable name, created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (it cannot exist
before, and a link in its place is refused) and mode 0600 (no one else reads a half-written
file); it gets the mode a plain ``open`` would give (0666 less the umask) once whole, is
fsynced, renamed over the target (a rename replaces a symlink at the target, never what it
points to) and the folder is fsynced, so the new name survives a crash. On any failure,
Ctrl-C included, the temporary is removed: nothing is left behind.

An output that is one of the command's inputs (the same file, by device and inode: a hard
link or a symlink to it counts) is refused before anything is written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from typing import IO, Iterator, Sequence

TEMP_SUFFIX = ".tmp"            # readers of a folder (``postmortem.inputs``) skip these names
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class OutputIsInput(ValueError):
    """The output path names a file the command reads."""


def same_file_as(path: str, inputs: Sequence[str]) -> str | None:
    """The input that ``path`` is (same device and inode), or None. A missing path is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    for other in inputs:
        try:
            o = os.stat(other)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (o.st_dev, o.st_ino):
            return other
    return None


def refuse_input(path: str, inputs: Sequence[str]) -> None:
    """``OutputIsInput`` when ``path`` is one of ``inputs``."""
    other = same_file_as(path, inputs)
    if other is not None:
        shown = "" if os.path.abspath(other) == os.path.abspath(path) else f" ({other})"
        raise OutputIsInput(f"is one of the inputs{shown}: writing it would destroy the "
                            "evidence; give another file")


def _umask() -> int:
    """The process's umask, read without changing it where Linux says it (``os.umask`` is
    set-and-restore, which races with other threads creating files)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fresh_temporary(folder: str, base: str) -> tuple[int, str]:
    for _ in range(100):
        name = os.path.join(folder, f".{base}.{secrets.token_hex(8)}{TEMP_SUFFIX}")
        try:
            return os.open(name, _FLAGS, 0o600), name
        except FileExistsError:             # someone's file (or link) holds that name: another
            continue
    raise FileExistsError(errno.EEXIST, "no fresh temporary name in the folder", folder)


def _fsync_folder(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return                              # a folder that cannot be opened cannot be synced
    try:
        os.fsync(fd)
    except OSError:                         # some file systems refuse fsync on folders
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_writer(path: str, binary: bool = False, inputs: Sequence[str] = ()
                  ) -> Iterator[IO]:
    """A file object whose contents replace ``path`` whole when the block ends without an
    exception (see the module note); ``OSError`` as the system says, ``OutputIsInput``."""
    refuse_input(path, inputs)
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    folder = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        fd, tmp = _fresh_temporary(folder, os.path.basename(path))
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8")) as f:
            yield f
            f.flush()
            os.fchmod(f.fileno(), 0o666 & ~_umask())
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
        _fsync_folder(folder)
    finally:
        if tmp is not None:                 # failed, interrupted or refused: leave nothing
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def write_text(path: str, text: str, inputs: Sequence[str] = ()) -> None:
    """``text`` (UTF-8) as the whole of ``path``, safely (``atomic_writer``)."""
    with atomic_writer(path, inputs=inputs) as f:
        f.write(text)


def write_bytes(path: str, data: bytes, inputs: Sequence[str] = ()) -> None:
    """``data`` as the whole of ``path``, safely (``atomic_writer``)."""
    with atomic_writer(path, binary=True, inputs=inputs) as f:
        f.write(data)


def open_log(path: str, truncate: bool = False) -> int:
    """A file a running process writes as it goes (a worker's stdout or stderr log, which
    cannot be written whole and renamed): opened for appending, never through a link
    (``O_NOFOLLOW``), and only a regular file or ``os.devnull``; its descriptor.
    ``truncate``: made empty first. OSError (ELOOP for a link) otherwise. ``O_NONBLOCK``:
    a FIFO planted there fails at once (no reader) instead of blocking; files ignore it."""
    flags = (os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
             | getattr(os, "O_CLOEXEC", 0))
    fd = os.open(path, flags | (os.O_TRUNC if truncate else 0), 0o666)
    if not stat.S_ISREG(os.fstat(fd).st_mode) and path != os.devnull:
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", path)
    return fd
