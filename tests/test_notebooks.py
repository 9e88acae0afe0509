"""The notebooks run clean on the CPU (outputs are stripped in git); their figures render."""

import os

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted(f for f in os.listdir("notebooks") if f.endswith(".ipynb"))
pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs(name):
    nb = nbformat.read(os.path.join("notebooks", name), as_version=4)
    NotebookClient(nb, timeout=240, kernel_name="python3",
                   resources={"metadata": {"path": os.getcwd()}}).execute()
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    assert images, f"{name} drew no figure"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebooks_are_stored_without_outputs(name):
    nb = nbformat.read(os.path.join("notebooks", name), as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
