"""Each inproc rank's own torchrun variables in the one process's ``os.environ``
(``trtsim.jobs.rank_environ``): a rank reads its own, every other variable is the process's."""

import contextvars
import os

from hypothesis import given, settings, strategies as st

from trtsim.jobs.rank_environ import RankEnviron, rank_environ, set_rank_vars

KEYS = st.sampled_from(["RANK", "WORLD_SIZE", "PATH_X", "HOME_X", "OTHER"])
VALUES = st.text(alphabet="abc012", max_size=3)
OPS = st.lists(st.tuples(st.sampled_from(["set", "del", "get"]), KEYS, VALUES), max_size=30)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(KEYS, VALUES), st.dictionaries(KEYS, VALUES), OPS)
def test_a_rank_sees_its_own_variables_over_the_process(real, own, ops):
    """Model: the process's mapping with the rank's own variables in front; writes to an own
    variable stay the rank's, others go to the process."""
    real_env, model_real, model_own = dict(real), dict(real), dict(own)
    env = RankEnviron(real_env)

    def run():
        from trtsim.jobs import rank_environ as module
        module._VARS.set(dict(own))          # noqa: SLF001 - this context's rank's own
        for op, key, value in ops:
            if op == "set":
                env[key] = value
                (model_own if key in model_own else model_real)[key] = value
            elif op == "del":
                present = key in model_own or key in model_real
                try:
                    del env[key]
                    deleted = True
                except KeyError:
                    deleted = False
                assert deleted == present
                if key in model_own:
                    del model_own[key]
                else:
                    model_real.pop(key, None)
            view = {**model_real, **model_own}
            assert env.get(key) == view.get(key)
            assert dict(env) == view and len(env) == len(view)
        assert real_env == model_real                      # the process saw only its own
    contextvars.copy_context().run(run)


def test_ranks_in_their_own_contexts_read_their_own_rank():
    with rank_environ() as env:
        assert os.environ is env
        seen = {}

        def rank(r):
            set_rank_vars({"RANK": r, "WORLD_SIZE": 2})
            seen[r] = (os.environ["RANK"], os.getenv("WORLD_SIZE"), os.environ.copy()["RANK"])
        contexts = [contextvars.copy_context() for _ in range(2)]
        for r, ctx in enumerate(contexts):
            ctx.run(rank, r)
        assert seen == {0: ("0", "2", "0"), 1: ("1", "2", "1")}
        assert contexts[1].run(lambda: os.environ["RANK"]) == "1"
        assert "RANK" not in os.environ or os.environ["RANK"] == os.environ.real.get("RANK")
    assert not isinstance(os.environ, RankEnviron)
