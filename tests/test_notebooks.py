"""The notebooks run clean on the CPU from their own folder, as Jupyter starts them (shipped
scenarios are found by name through the package, not the working directory); outputs are
stripped in git; their figures render."""

import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

FOLDER = pathlib.Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(p.name for p in FOLDER.glob("*.ipynb"))
pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs(name):
    nb = nbformat.read(FOLDER / name, as_version=4)
    NotebookClient(nb, timeout=240, kernel_name="python3",
                   resources={"metadata": {"path": str(FOLDER)}}).execute()
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    assert images, f"{name} drew no figure"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebooks_are_stored_without_outputs(name):
    nb = nbformat.read(FOLDER / name, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


def test_docs_cite_only_what_ships():
    # Every "DESIGN" citation points into docs/DESIGN.md, which has the cited sections.
    design = (FOLDER.parent / "docs" / "DESIGN.md").read_text()
    for cited in ("### 3.2 Topologies", "5.1 **", "5.3 **", "## 4. "):
        assert cited in design
    readme = (FOLDER.parent / "README.md").read_text()
    assert "of the design" not in readme and "docs/DESIGN.md" in readme
