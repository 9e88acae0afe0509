"""Packaging beyond setup.cfg: the checkout's top-level data folders ship inside the package.

``scenarios/``, ``notebooks/``, ``benchmarks/`` and ``kernels/`` live at the top of the
checkout (where a developer edits and runs them) and install as ``trtsim/_shipped/<folder>``,
so an installed trtsim finds them through the package (``trtsim.scenario.shipped``) whatever
the working directory or install prefix. setup.cfg cannot map a package onto a folder outside
the package tree, hence this file.
"""

from setuptools import find_packages, setup

SHIPPED = {"scenarios": ["*.yaml"], "notebooks": ["*.ipynb"], "benchmarks": ["*.py"],
           "kernels": ["*.cu", "*.cuh"]}

setup(
    packages=find_packages(include=["trtsim", "trtsim.*"])
    + [f"trtsim._shipped.{folder}" for folder in SHIPPED],
    package_dir={f"trtsim._shipped.{folder}": folder for folder in SHIPPED},
    package_data={"trtsim.perf": ["data/*.json"],     # the measured host-collective prices
                  **{f"trtsim._shipped.{folder}": globs for folder, globs in SHIPPED.items()}},
)
