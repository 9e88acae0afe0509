"""The frameworks' files, from their published wheels, into a cache outside the repository.

``extract(pin)`` returns the root under which ``pin.members`` lie exactly as in the wheel:
``pip download --no-deps`` the wheel into a temporary folder, check each member against the
wheel's RECORD (sha256), write the members into a temporary folder beside the cache entry, and
rename that into place. The rename is the commit: a killed download or extraction leaves no
entry (only a temporary folder, which the next extraction removes), and the lock file keeps
concurrent pytest-xdist workers from downloading twice. The wheel itself is deleted with its
temporary folder. The entry's name carries a digest of the member list, so a test that needs
one more file gets a fresh entry rather than a half-filled old one.

Cache: ``$XDG_CACHE_HOME/trtsim/realcode`` (default ``~/.cache/trtsim/realcode``).
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

DOWNLOAD_TIMEOUT_S = 900        # vLLM's wheel is ~340 MB


class RegistryUnreachable(RuntimeError):
    """``pip download`` could not fetch the wheel (no network, no such release)."""


@dataclass(frozen=True)
class Pin:
    """One release and the files of its wheel that the tests load (``members=None``: the
    whole wheel, for a small dependency with compiled modules)."""

    package: str
    version: str
    members: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.members is None:
            return
        bad = [m for m in self.members if not m.endswith(".py") or m.startswith(("/", ".."))]
        if bad or not self.members:
            raise ValueError(f"{self.package} pin: members must be relative .py paths: {bad}")

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def entry(self) -> str:
        """The cache entry's folder name: release and a digest of the member list."""
        listed = "*" if self.members is None else "\n".join(sorted(self.members))
        digest = hashlib.sha256(listed.encode()).hexdigest()[:12]
        return f"{self.package}-{self.version}-{digest}"


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "trtsim" / "realcode"


def extract(pin: Pin, root: Path | None = None) -> Path:
    """The extraction root of ``pin`` (downloading and extracting it once); raises
    RegistryUnreachable when the wheel cannot be downloaded."""
    root = cache_root() if root is None else root
    final = root / pin.entry
    if final.is_dir():
        return final
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{pin.entry}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)              # released when the file closes
        if final.is_dir():                             # another worker finished meanwhile
            return final
        for stale in root.glob(f".{pin.entry}.*"):      # a killed run's; the lock is ours
            shutil.rmtree(stale, ignore_errors=True)
        with tempfile.TemporaryDirectory(dir=root, prefix=f".{pin.entry}.") as tmp:
            wheel = _download(pin, Path(tmp) / "wheel")
            staged = Path(tmp) / "files"
            _unpack(wheel, pin, staged)
            os.rename(staged, final)
    return final


def _download(pin: Pin, into: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "--no-input", "-q", "-d", str(into), pin.requirement]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise RegistryUnreachable(f"pip download {pin.requirement}: no answer in "
                                  f"{DOWNLOAD_TIMEOUT_S} s") from None
    wheels = sorted(into.glob("*.whl")) if into.is_dir() else []
    if done.returncode != 0 or len(wheels) != 1:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise RegistryUnreachable(f"pip download {pin.requirement} failed "
                                  f"(exit {done.returncode}): {tail}")
    return wheels[0]


def _record(wheel: zipfile.ZipFile, pin: Pin) -> dict[str, str]:
    """path -> 'sha256=<urlsafe b64>' from the wheel's RECORD."""
    name = f"{pin.package}-{pin.version}.dist-info/RECORD"
    out = {}
    for line in wheel.read(name).decode().splitlines():
        path, digest, _size = line.rsplit(",", 2)
        out[path] = digest
    return out


def sha256_field(data: bytes) -> str:
    """A file's digest as RECORD writes it."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(
        b"=").decode()


def _unpack(wheel_path: Path, pin: Pin, into: Path) -> None:
    """Write the members into ``into`` with a RECORD of them; each checked against the
    wheel's RECORD, so the files are the published bytes."""
    with zipfile.ZipFile(wheel_path) as wheel:
        record = _record(wheel, pin)
        members = pin.members or tuple(m for m, digest in record.items() if digest)
        missing = [m for m in members if m not in record]
        if missing:
            raise ValueError(f"{pin.requirement}: not in the wheel: {', '.join(missing)}")
        lines = []
        for member in members:
            data = wheel.read(member)
            if sha256_field(data) != record[member]:
                raise ValueError(f"{pin.requirement}: {member} does not match its RECORD")
            target = into / member
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            lines.append(f"{member},{record[member]}")
    (into / "RECORD").write_text("\n".join(sorted(lines)) + "\n")


def recorded(root: Path) -> dict[str, str]:
    """An extraction's member -> RECORD digest, as written at extraction."""
    rows = (line.rsplit(",", 1) for line in (root / "RECORD").read_text().splitlines())
    return dict(rows)

