"""A synthetic target model with controllable acceptance, on real tensors.

Each request has a deterministic ground-truth token stream ``truth(rid, pos)``. The target's
logits for a position peak on its truth token (with a runner-up one step below, for relaxed
acceptance). A draft for a position equals the truth with probability ``acceptance``; when it
does not, it is the runner-up. Every decision is a hash of (seed, request, position), so a run
is reproducible and the measured acceptance length can be compared with the formula.
Under TP the drafter's vocabulary is sharded: ``vocab_shard`` gives each rank its slice.
"""

from __future__ import annotations

import zlib

import torch

PEAK, RUNNER_UP = 4.0, 3.5     # logit of the truth and of the runner-up, over noise in [0, 1)


def _hash(*parts) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


class SyntheticModel:
    """Truth streams, target logits and drafter steering for one run."""

    def __init__(self, vocab_size: int, hidden_size: int, acceptance: float, seed: int = 0,
                 device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32):
        self.vocab_size, self.hidden_size = vocab_size, hidden_size
        self.acceptance, self.seed = acceptance, seed
        self.device, self.dtype = torch.device(device), dtype
        gen = torch.Generator().manual_seed(seed)
        # [64, V] noise rows, reused round-robin: logits stay cheap to build on any device.
        self.noise = torch.rand(64, vocab_size, generator=gen).to(self.device, dtype)
        self.embedding = (torch.randn(vocab_size, hidden_size, generator=gen) * 0.1).to(
            self.device, dtype)

    def truth(self, rid: int, pos: int) -> int:
        return _hash(self.seed, "truth", rid, pos) % self.vocab_size

    def runner_up(self, rid: int, pos: int) -> int:
        return (self.truth(rid, pos) + 1 + _hash(self.seed, "ru", rid, pos) % (self.vocab_size - 1)) \
            % self.vocab_size

    def draft_agrees(self, rid: int, pos: int) -> bool:
        return (_hash(self.seed, "agree", rid, pos) % 1_000_000) / 1_000_000 < self.acceptance

    def draft_token(self, rid: int, pos: int) -> int:
        """The token the drafter proposes for ``pos``."""
        return self.truth(rid, pos) if self.draft_agrees(rid, pos) else self.runner_up(rid, pos)

    def target_logits(self, truth: torch.Tensor, runner: torch.Tensor) -> torch.Tensor:
        """[rows, V] logits peaking on ``truth`` (int64 [rows]), ``runner`` one step below."""
        rows = truth.numel()
        idx = torch.arange(rows, device=truth.device) % self.noise.shape[0]
        logits = self.noise[idx].clone()
        logits.scatter_(1, runner.view(-1, 1), RUNNER_UP)
        logits.scatter_(1, truth.view(-1, 1), PEAK)
        return logits

    def hidden(self, tokens: torch.Tensor) -> torch.Tensor:
        """The target's hidden rows of ``tokens``: [T, H]."""
        return self.embedding[tokens.long()]


def vocab_shard(vocab_size: int, tp_size: int, tp_rank: int) -> tuple[int, int]:
    """[start, stop) of the vocabulary on one TP rank (the last shard takes the remainder)."""
    per = vocab_size // tp_size
    return tp_rank * per, vocab_size if tp_rank == tp_size - 1 else (tp_rank + 1) * per
