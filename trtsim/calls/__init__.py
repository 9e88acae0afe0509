"""The call vocabulary every other communication wing speaks: what a call is, not how it runs.

``ops`` (the one table of operations: which are collectives, receives, rooted, reducing),
``records`` (``CallRecord``: one rank's call as the guard sees it), ``errors`` (the reports a
launch raises), ``reduce_op`` and ``semantics`` (what each collective computes, as pure
functions), ``purpose_paths`` (the purpose chain's separator and shortening) and
``call_log_format`` (the on-disk form of a rank's calls, read by ``postmortem``). Imports only
``layout`` and the base modules.
"""
