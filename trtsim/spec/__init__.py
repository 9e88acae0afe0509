"""Speculative decoding (one-model MTP): the workers with their entry-point contract, the
synthetic acceptance model's configuration, and the generation step of the executor."""

from .config import SpecConfig
from .dynamic_tree import MTPEagleDynamicTreeWorker
from .generation_step import GenerationStep
from .mtp import MTPEagleWorker, MTPWorker
from .worker_base import SpecWorker, StepTensors

__all__ = ["SpecConfig", "SpecWorker", "StepTensors", "MTPWorker", "MTPEagleWorker",
           "MTPEagleDynamicTreeWorker", "GenerationStep"]
