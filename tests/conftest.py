"""Test session settings: tensors here are tiny, and pytest-xdist already runs one worker per
core, so torch's intra-op thread pool would only oversubscribe the cores (its OpenMP workers
spin), slowing the inproc backend by an order of magnitude.

This repository's own ``gpu`` marker (setup.cfg registers it with ``slow``) is skipped here
without a GPU; the installed trtsim plugin only ever skips its own ``trtsim_gpu`` marker.

What trtsim keeps in the user's cache folder (flipped runs' counterexamples, the explore
command's hypothesis files) goes to a folder of this test run's own, never the user's."""

import atexit
import os
import shutil
import tempfile

import pytest
import torch

torch.set_num_threads(1)
# One folder per test process (each xdist worker imports this file); spawned ranks inherit it.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="trtsim_test_cache_")
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], ignore_errors=True)

pytest_plugins = ["pytester", "tests.postmortem_fixtures"]   # the post-mortem tests' dumps


def pytest_collection_modifyitems(config, items) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)
