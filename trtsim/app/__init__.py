"""Faces: what a person types or reads. The ``trtsim`` command, the pytest plugin, exploration
with hypothesis, ``compare``, and the pictures of the notebooks. Nothing below imports them."""
