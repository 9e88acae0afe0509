"""A small project that is not trtsim, for checking that trtsim's installed pytest plugin
leaves it alone: its own ``gpu`` marker, a test asserting the plugin is loaded but torch is
not, and a test with a typo'd marker that ``--strict-markers`` must still refuse."""

INI = "[pytest]\nmarkers =\n    gpu: this project's own GPU tests\n"

THEIRS = '''
import sys
import pytest


@pytest.mark.gpu
def test_their_gpu_test():
    assert True


def test_plugin_is_loaded_and_torch_is_not(request):
    assert request.config.pluginmanager.has_plugin("trtsim")
    assert "torch" not in sys.modules
'''

TYPO = '''
import pytest


@pytest.mark.slwo
def test_typo():
    pass
'''

FILES = {"pytest.ini": INI, "test_theirs.py": THEIRS, "test_typo.py": TYPO}


def write(folder) -> None:
    """The project's files in ``folder`` (a pathlib.Path)."""
    for name, text in FILES.items():
        (folder / name).write_text(text)
