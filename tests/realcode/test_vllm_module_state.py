"""vLLM's parallel_state imported once, at the top of this file, and used by every rank of an
inproc launch: each rank gets its own module state (vLLM keeps its groups in the module
globals ``_WORLD``, ``_TP``, ``_PP``), and the launcher's copy is left as imported. (On gloo
each rank is a process with its own modules: nothing to test there.)"""

from tests.realcode import frameworks

frameworks.require(frameworks.VLLM)

from vllm.distributed import parallel_state  # noqa: E402

from tests.realcode import harness, vllm_programs  # noqa: E402


def groups_of_this_rank(dist) -> tuple:
    vllm_programs.start_vllm(dist, tp=2, pp=2)
    return (parallel_state.get_world_group().rank, parallel_state.get_tp_group().ranks,
            parallel_state.get_pp_group().ranks)


def test_a_module_imported_once_gives_every_inproc_rank_its_own_groups():
    results = harness.launch(groups_of_this_rank, "inproc", ("vllm",), tp=2, pp=2)
    assert list(results) == [(0, [0, 1], [0, 2]), (1, [0, 1], [1, 3]),
                             (2, [2, 3], [0, 2]), (3, [2, 3], [1, 3])]
    assert parallel_state._WORLD is None and parallel_state._TP is None
