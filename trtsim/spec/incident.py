"""Incident 5.1 reproduction: a worker whose ``forward`` bypasses the entry point.

DELIBERATELY UNCHECKED. A class statement that defines ``forward`` in a SpecWorker subclass is
refused (worker_base.SpecWorker.__init_subclass__). The regression of incident 5.1 is rebuilt
here by assigning ``forward`` after the class exists, which the check cannot see, so its cost
can be measured: no profiling range, no CUDA-graph dispatch, every step eager.
Nothing but the incident scenario and its benchmark may use this.
"""

from __future__ import annotations

from .worker_base import SpecWorker


def bypassing_worker_class(base: type[SpecWorker]) -> type[SpecWorker]:
    """A subclass of ``base`` whose forward calls ``_forward_impl`` directly (the bug)."""
    cls = type(f"Bypassing{base.__name__}", (base,), {"__doc__": __doc__})

    def forward(self, inputs):          # what the regressed subclass did
        self.num_eager_steps += 1
        return self._forward_impl(inputs)

    cls.forward = forward               # unchecked on purpose: see the module docstring
    cls._entry_point_checked = False
    return cls
