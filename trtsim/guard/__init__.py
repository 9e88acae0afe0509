"""The collective-symmetry guard: pure functions over call records.

``rules`` says when members' records at one group sequence disagree (the one matching rule,
also hashed by the process backend's ledger); ``policy`` what each guard mode does with that;
``waitfor`` which blocked ranks can never proceed; ``lockstep`` how groups of one kind diverge
between iterations.
"""
