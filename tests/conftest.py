"""Test session settings: tensors here are tiny, and pytest-xdist already runs one worker per
core, so torch's intra-op thread pool would only oversubscribe the cores (its OpenMP workers
spin), slowing the inproc backend by an order of magnitude."""

import torch

torch.set_num_threads(1)

pytest_plugins = ["pytester"]
