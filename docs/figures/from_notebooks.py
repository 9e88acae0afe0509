"""The pictures of docs/figures/ that come from the notebooks: each notebook is executed on
the CPU (nbclient, from its own folder, as Jupyter starts it) and the figures the docs show
are written as small palette PNGs. Run from the repository root after
``pip install -e '.[notebooks]'``:

    python docs/figures/from_notebooks.py [--all DIR]

``--all DIR`` writes every figure each notebook draws to DIR instead, as NOTEBOOK_N.png.
"""

from __future__ import annotations

import base64
import io
import pathlib
import sys

import nbformat
from nbclient import NotebookClient
from PIL import Image

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
OUT = ROOT / "docs" / "figures"
# notebook -> {figure number (in the order the notebook draws them): file written}
WANTED = {
    "01_topologies.ipynb": {0: "rank_grid_tp4_pp2_dp_both.png"},
    "02_deadlock_hunt.ipynb": {0: "sticky_skip_timeline.png"},
    "03_mtp_acceptance.ipynb": {0: "mtp_acceptance.png"},
}


def figures(name: str) -> list[bytes]:
    """The PNGs notebook ``name`` draws when executed, in order."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    return [base64.b64decode(out["data"]["image/png"]) for cell in nb.cells
            if cell.cell_type == "code" for out in cell.get("outputs", [])
            if "image/png" in out.get("data", {})]


def small_png(png: bytes) -> bytes:
    """The picture with a 64-colour palette: a few tens of kB, the same to the eye."""
    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=64)
    buf = io.BytesIO()
    image.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def main(argv: list[str]) -> int:
    every = pathlib.Path(argv[argv.index("--all") + 1]) if "--all" in argv else None
    for name, wanted in WANTED.items():
        drawn = figures(name)
        if every is not None:
            every.mkdir(parents=True, exist_ok=True)
            wanted = {i: f"{pathlib.Path(name).stem}_{i}.png" for i in range(len(drawn))}
        for index, file in wanted.items():
            data = small_png(drawn[index])
            path = (every or OUT) / file
            path.write_bytes(data)
            print(f"{name} figure {index} -> {path} ({len(data) // 1024} kB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
