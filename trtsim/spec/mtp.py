"""MTP workers: vanilla (K distinct MTP layers) and Eagle (one layer applied K times).

One step (DESIGN 3.6), all on the worker's device:
  1. the target's logits rows -> fused sample-and-accept (or relaxed acceptance): accepted
     [R, K+1], num_accepted [R];
  2. the hidden-state ring per slot: shift by the accepted count and append (a memmove);
  3. drafter inputs: context prompt[1:] + [accepted[0]], generation past_tokens[1:] +
     [accepted[num-1]], with their hidden rows;
  4. the drafter: K steps of an MTP layer (tanh(x @ W_k)), the lm_head over this rank's
     vocabulary shard, argmax -- under TP a local argmax and a tp_allgather of (value, index)
     per draft step, a real collective. The synthetic model steers each draft to the token it
     should propose (a large logit bias), so acceptance is controlled while the work is real.
"""

from __future__ import annotations

import torch

from ..kernels import (mtp_sample_and_accept, prepare_drafter_inputs, relaxed_accept,
                       update_hidden_ring)
from ..model import SyntheticModel, vocab_shard
from .config import SpecConfig
from .worker_base import SpecWorker, StepTensors

STEER = 100.0
_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


class _ChainWorker(SpecWorker):
    """Shared by the vanilla and Eagle workers: acceptance, ring, drafter loop."""

    num_layers = 1

    def __init__(self, config: SpecConfig, device, num_slots: int = 256, seed: int = 0,
                 dist=None, shard_vocab: bool = False):
        super().__init__(config, device)
        dtype = _DTYPES[config.dtype]
        self.model = SyntheticModel(config.vocab_size, config.hidden_size, config.acceptance,
                                    seed, self.device, dtype)
        k, h = config.max_draft_len, config.hidden_size
        gen = torch.Generator().manual_seed(seed + 1)
        self.weights = [(torch.randn(h, h, generator=gen) / h ** 0.5).to(self.device, dtype)
                        for _ in range(self.num_layers)]
        self.dist = dist if (shard_vocab and dist is not None and dist.tp_size > 1) else None
        tp, rank = (dist.tp_size, dist.tp_rank) if self.dist else (1, 0)
        self.vocab = vocab_shard(config.vocab_size, tp, rank)
        self.lm_head = (torch.randn(h, config.vocab_size, generator=gen) / h ** 0.5)[
            :, self.vocab[0]:self.vocab[1]].to(self.device, dtype).contiguous()
        self.past_tokens = torch.zeros(num_slots, k, dtype=torch.int32, device=self.device)
        self.past_hidden = torch.zeros(num_slots, k, h, dtype=dtype, device=self.device)
        # relaxed acceptance: every slot starts in the thinking phase (delta on); the begin /
        # end thinking ids of the synthetic vocabulary never occur, so it stays on
        self.delta_pool = torch.full((num_slots,), config.relaxed_delta if config.relaxed else 0.0,
                                     dtype=torch.float32, device=self.device)

    @property
    def has_collectives(self) -> bool:
        return self.dist is not None

    def _state_tensors(self):
        return [self.past_tokens, self.past_hidden, self.delta_pool]

    def init_ring(self, prompt_tail: torch.Tensor, slot_ids: torch.Tensor) -> None:
        """Start the rings of new requests from their last K prompt tokens ([R*K] int32)."""
        k = self.config.max_draft_len
        r = slot_ids.numel()
        lens = torch.full((r,), k, dtype=torch.int32, device=self.device)
        update_hidden_ring(prompt_tail, lens, self.model.hidden(prompt_tail), lens,
                           self.past_tokens, self.past_hidden, slot_ids, r)

    def layer(self, k: int) -> torch.Tensor:
        return self.weights[k % self.num_layers]

    def _forward_impl(self, t: StepTensors):
        cfg, k = self.config, self.config.max_draft_len
        nc = t.num_context
        logits = self.model.target_logits(t.truth, t.runner)
        if cfg.relaxed:
            probs = torch.softmax(logits.float(), dim=-1)
            top_p, top_i = torch.topk(probs, cfg.relaxed_topk, dim=-1)
            accepted, num = relaxed_accept(top_p, top_i, t.drafts, t.slot_ids, self.delta_pool,
                                           nc, k, cfg.relaxed_delta, -1, -2)
        else:
            accepted, num = mtp_sample_and_accept(logits, t.drafts, nc, k)
        hidden = self.model.hidden(t.input_ids)
        update_hidden_ring(t.input_ids, t.seq_lens, hidden, num, self.past_tokens,
                           self.past_hidden, t.slot_ids, nc)
        ids, rows = prepare_drafter_inputs(t.input_ids, t.seq_lens, hidden, accepted, num,
                                           self.past_tokens, self.past_hidden, t.slot_ids, nc)
        r = t.seq_lens.numel()
        # every request has K drafter-input rows (context rows feed the last K prompt tokens)
        last_id = ids.view(r, k)[:, -1].long()
        h = rows.view(r, k, -1)[:, -1]
        steer = t.steer[torch.arange(r, device=self.device), (num - 1).long()]   # [R, K]
        drafts = []
        for step in range(k):
            h = torch.tanh((h + self.model.embedding[last_id]) @ self.layer(step))
            last_id = self._draft_argmax(h @ self.lm_head, steer[:, step])
            drafts.append(last_id)
        return num, torch.stack(drafts, dim=1).to(torch.int32), accepted

    def _draft_argmax(self, logits: torch.Tensor, steer: torch.Tensor) -> torch.Tensor:
        """Argmax of the steered drafter logits over the whole vocabulary: [R] int64."""
        lo, hi = self.vocab
        local = ((steer >= lo) & (steer < hi)).float().view(-1, 1)   # is the target in my shard?
        col = (steer - lo).clamp(0, hi - lo - 1).view(-1, 1)
        logits = logits.float().scatter_add(1, col, local * STEER)
        val, idx = logits.max(dim=-1)
        if self.dist is None:
            return idx + lo
        # TP: local argmax, then the global one from every shard's (value, index)
        pairs = self.dist.tp_allgather((val.cpu(), (idx + lo).cpu()), label="mtp_draft_argmax")
        vals = torch.stack([p[0] for p in pairs])            # [tp, R]
        idxs = torch.stack([p[1] for p in pairs])
        best = torch.argmax(vals, dim=0)                      # ties: the lowest shard
        return idxs.gather(0, best.view(1, -1)).view(-1).to(logits.device)


class MTPWorker(_ChainWorker):
    """Vanilla MTP: K distinct MTP layers, one per draft position."""

    def __init__(self, config: SpecConfig, *args, **kwargs):
        self.num_layers = config.max_draft_len
        super().__init__(config, *args, **kwargs)


class MTPEagleWorker(_ChainWorker):
    """Eagle-style MTP: one MTP layer applied K times, one token per step."""

    num_layers = 1
