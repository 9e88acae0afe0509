"""Layout: who is where. The bottom wing; it imports nothing else of trtsim.

Owns TensorRT-LLM's rank formula (``Mapping``), the one layout type (``ParallelLayout``; an
``InstanceSpec`` is a layout with the model facts of its KV cache), the deployments of the
transceiver tests (``topology``), and where each rank of a launch sits (``RankPlace``, with the
one rule for naming a rank in a report).
"""

from .mapping import CpType, Mapping
from .parallel import GROUP_KINDS, ParallelLayout, pp_layer_split
from .places import (InstanceLayout, Peer, RankPlace, group_table, rank_label, rank_places,
                     ranks_label)
from .topology import Deployment, InstanceSpec, format_table, topologies, topology

__all__ = ["GROUP_KINDS", "CpType", "Mapping", "ParallelLayout", "pp_layer_split",
           "InstanceLayout", "Peer", "RankPlace", "group_table", "rank_label", "rank_places",
           "ranks_label", "Deployment",
           "InstanceSpec", "format_table", "topologies", "topology"]
