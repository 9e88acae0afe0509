"""A package that keeps per-process state in module globals, as serving frameworks do
(``parallel_state._TP`` and a ``_groups`` registry filled in place); tests/test_rank_local.py
runs it on inproc ranks."""
