"""Faults injected into one request (scenario key ``faults``), parsed once.

Spelled in scenarios as ``ctx_fail``, ``ctx_cancel``, ``gen_fail``, ``gen_cancel`` (a transfer
fails or is cancelled on the context or generation side, at the lowest rank holding it, so only
consensus spreads it), ``timeout`` (the request's transfer times out locally), ``error`` (a
rank raises an in-flight error, seen by the error sync) and ``send_retry@S`` (PP stage S of the
context retries its first send one iteration later).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SPELLINGS = ("ctx_fail", "ctx_cancel", "gen_fail", "gen_cancel", "timeout", "error",
             "send_retry@STAGE")


@dataclass(frozen=True)
class Fault:
    """What goes wrong (``kind``), on which side of the transfer, and for ``send_retry`` the
    PP stage."""

    kind: Literal["fail", "cancel", "timeout", "error", "send_retry"]
    side: Literal["ctx", "gen", ""] = ""
    stage: int | None = None

    @classmethod
    def parse(cls, text) -> "Fault":
        """The fault a scenario spells ``text``; ValueError listing the spellings otherwise."""
        if isinstance(text, str):
            side, _, kind = text.partition("_")
            if side in ("ctx", "gen") and kind in ("fail", "cancel"):
                return cls(kind, side)
            if text in ("timeout", "error"):
                return cls(text)
            head, sep, stage = text.partition("@")
            if head == "send_retry" and sep and stage.isdigit():
                return cls("send_retry", "ctx", int(stage))
        raise ValueError(f"{text!r} is not one of {', '.join(SPELLINGS)}")

    def on(self, side: str) -> str | None:
        """The transfer outcome this fault forces on ``side`` (``fail`` | ``cancel``), or None."""
        return self.kind if self.side == side and self.kind in ("fail", "cancel") else None

    def __str__(self) -> str:
        if self.kind == "send_retry":
            return f"send_retry@{self.stage}"
        return f"{self.side}_{self.kind}" if self.side else self.kind
