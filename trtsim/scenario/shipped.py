"""What trtsim ships beside its code: scenarios, notebooks, benchmarks, CUDA sources.

A checkout keeps them at its top level (``scenarios/``, ``notebooks/``, ...); a wheel installs
them inside the package as ``trtsim/_shipped/<folder>`` (setup.py). Both are found from the
package's own location, never from the working directory, so ``trtsim run kv_transfer`` and a
notebook started from ``notebooks/`` find the same files.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]
FOLDERS = ("scenarios", "notebooks", "benchmarks", "kernels")


def shipped_dir(folder: str) -> Path | None:
    """The folder as this installation has it (checkout first, then the package), or None."""
    if folder not in FOLDERS:
        raise ValueError(f"folder={folder!r} is not one of {', '.join(FOLDERS)}")
    for path in (_PACKAGE.parent / folder, _PACKAGE / "_shipped" / folder):
        if path.is_dir():
            return path
    return None


def scenario_names() -> list[str]:
    """The shipped scenarios by name (file stem), sorted."""
    root = shipped_dir("scenarios")
    return sorted(p.stem for p in root.glob("*.yaml")) if root else []


def scenario_path(name: str) -> Path | None:
    """The shipped scenario called ``name`` (``kv_transfer`` or ``kv_transfer.yaml``), or None."""
    root = shipped_dir("scenarios")
    stem = name[:-5] if name.endswith(".yaml") else name
    if root is None or "/" in stem or "\\" in stem or not stem:
        return None
    path = root / f"{stem}.yaml"
    return path if path.is_file() else None
