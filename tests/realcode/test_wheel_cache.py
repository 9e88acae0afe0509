"""The frameworks' files come from their published wheels, unmodified: the cache holds the
wheel's bytes (RECORD digests), the modules the tests import are those files, an extraction
that dies leaves nothing behind, racing workers download once, and an unreachable registry
fails the tests where CI is set and skips them elsewhere."""

import importlib
import threading
import zipfile
from pathlib import Path

import pytest

from tests.realcode import frameworks, wheels

REPO = Path(__file__).resolve().parents[2]
PINS = {"vllm": frameworks.VLLM, "sglang": frameworks.SGLANG}
THEIRS = {"vllm": ("vllm.distributed.parallel_state", "vllm.v1.worker.dp_utils",
                   "vllm.distributed.device_communicators.base_device_communicator"),
          "sglang": ("sglang.srt.distributed.parallel_state", "sglang.srt.layers.dp_attention")}


def test_the_loaded_modules_are_the_wheels_bytes(framework_roots):
    for package, root in framework_roots.items():
        record = wheels.recorded(root)
        assert record.keys() == set(PINS[package].members)
        for member, digest in record.items():
            assert wheels.sha256_field((root / member).read_bytes()) == digest, member
        for name in THEIRS[package]:
            module = importlib.import_module(name)
            assert Path(module.__file__).is_relative_to(root), (name, module.__file__)
            assert Path(module.__file__).relative_to(root).as_posix() in record, name
        assert not root.is_relative_to(REPO) and not (REPO / package).exists()


def fake_wheel(folder: Path, pin: wheels.Pin, files: dict[str, bytes],
               tamper: str | None = None) -> Path:
    """A wheel of ``files`` with its RECORD (``tamper``: that file's bytes differ from it)."""
    path = folder / f"{pin.package}-{pin.version}-py3-none-any.whl"
    rows = [f"{name},{wheels.sha256_field(data)},{len(data)}" for name, data in files.items()]
    rows.append(f"{pin.package}-{pin.version}.dist-info/RECORD,,")
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data + (b"#" if name == tamper else b""))
        wheel.writestr(f"{pin.package}-{pin.version}.dist-info/RECORD", "\n".join(rows))
    return path


FILES = {"demo/__init__.py": b"", "demo/core.py": b"X = 1\n", "demo/extra.py": b"Y = 2\n"}
PIN = wheels.Pin("demo", "1.0", ("demo/__init__.py", "demo/core.py"))


def serve(monkeypatch, tamper=None, calls=None, fail=False):
    def download(pin, into):
        if calls is not None:
            calls.append(pin)
        into.mkdir(parents=True)
        if fail:                                   # dies after writing part of the wheel
            (into / "partial.whl").write_bytes(b"PK")
            raise KeyboardInterrupt
        return fake_wheel(into, pin, FILES, tamper)
    monkeypatch.setattr(wheels, "_download", download)


def test_only_the_listed_files_are_extracted_with_their_record(tmp_path, monkeypatch):
    serve(monkeypatch)
    root = wheels.extract(PIN, tmp_path)
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")) == list(PIN.members)
    assert (root / "demo/core.py").read_bytes() == FILES["demo/core.py"]
    assert not list(tmp_path.glob(".demo-*"))                 # no temporary folder left


def test_a_file_that_differs_from_its_record_leaves_no_entry(tmp_path, monkeypatch):
    serve(monkeypatch, tamper="demo/core.py")
    with pytest.raises(ValueError, match="demo/core.py does not match its RECORD"):
        wheels.extract(PIN, tmp_path)
    assert not (tmp_path / PIN.entry).exists()


def test_a_killed_extraction_leaves_no_entry_and_the_next_one_completes(tmp_path, monkeypatch):
    serve(monkeypatch, fail=True)
    with pytest.raises(KeyboardInterrupt):
        wheels.extract(PIN, tmp_path)
    assert not (tmp_path / PIN.entry).exists()
    serve(monkeypatch)
    assert (wheels.extract(PIN, tmp_path) / "demo/core.py").is_file()


def test_racing_extractions_download_once(tmp_path, monkeypatch):
    calls = []
    serve(monkeypatch, calls=calls)
    out = []
    threads = [threading.Thread(target=lambda: out.append(wheels.extract(PIN, tmp_path)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(calls) == 1 and len(set(out)) == 1 and len(out) == 4


def test_another_member_list_is_another_entry():
    assert PIN.entry != wheels.Pin("demo", "1.0", PIN.members + ("demo/extra.py",)).entry


@pytest.fixture()
def no_registry(tmp_path, monkeypatch):
    """pip with no configuration and an index that refuses connections (nothing listens on
    port 9 of the loopback): the registry cannot be reached."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_CONSTRAINT", "PIP_NO_INDEX"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("ci", [True, False])
def test_an_unreachable_registry_fails_under_ci_and_skips_elsewhere(no_registry, monkeypatch, ci):
    if ci:
        monkeypatch.setenv("CI", "true")
    else:
        monkeypatch.delenv("CI", raising=False)
    outcome = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(outcome, match="vllm==0.33.0 from the package registry: pip download"):
        frameworks.require(frameworks.VLLM)
