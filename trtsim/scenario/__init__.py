"""Scenarios: YAML (ours, and TRT-LLM's perf-sanity files) -> validated frozen configuration.

``functional`` (deployments run by the executor and transceiver), ``perf`` (cluster-scale
serving predictions), ``perf_sanity`` (TRT-LLM's own files imported as perf scenarios).
Nothing here runs anything: the jobs wing does.
"""

from .functional import ScenarioError, load_scenario

__all__ = ["ScenarioError", "load_scenario"]
