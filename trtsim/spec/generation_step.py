"""The generation step of a generation rank: MTP inside the executor's forward.

The executor hands its batch of generating requests; this step lays out the worker's inputs
(the last token and the K drafts of the previous step; a request's first step verifies the K
drafts the context instance handed over with it, and its hidden-state ring starts from its
last K prompt tokens), runs the worker through its entry point, and sets each request's
tokens each request emits (returned to the executor, whose update turns them into tokens and
KV growth). Slots of the hidden-state rings are assigned per request and recycled when
requests leave.
"""

from __future__ import annotations

import torch

from ..model import SyntheticModel
from .config import SpecConfig
from .dynamic_tree import MTPEagleDynamicTreeWorker, TreeTensors
from .mtp import MTPEagleWorker, MTPWorker
from .worker_base import StepTensors

WORKERS = {"MTP": MTPWorker, "MTPEagle": MTPEagleWorker, "DynamicTree": MTPEagleDynamicTreeWorker}


class GenerationStep:
    """Per generation rank: the worker, ring slots, and each request's pending drafts."""

    def __init__(self, config: SpecConfig, dist=None, seed: int = 0, num_slots: int = 256,
                 device=None):
        self.config = config
        device = torch.device(device) if device is not None else (
            dist.device if dist is not None else torch.device("cpu"))
        shard = dist is not None and dist.tp_size > 1 and not dist.mapping.enable_attention_dp
        worker_cls = WORKERS[config.decoding_type]
        if config.bypass_entry_point:
            from .incident import bypassing_worker_class
            worker_cls = bypassing_worker_class(worker_cls)
        self.worker = worker_cls(config, device, num_slots=num_slots, seed=seed, dist=dist,
                                 shard_vocab=shard)
        self.model = SyntheticModel(config.vocab_size, config.hidden_size, config.acceptance,
                                    seed)     # host-side truth: the same hashes as the worker's
        self.device = device
        self._free = list(range(num_slots - 1, -1, -1))
        self.slots: dict[int, int] = {}
        self.drafts: dict[int, list[int]] = {}
        self.trees: dict[int, tuple] = {}
        self.last_inputs = None                   # the worker's inputs of the last step
        self.num_steps = 0                        # request-steps
        self.num_emitted = 0

    # -- the executor's hook -------------------------------------------------------------
    def step(self, executor, batch) -> dict[int, int]:
        """Run one worker step for ``batch``: tokens each request emits, by request id."""
        live = {r.request_id for r in executor.active.values()}
        for rid in [rid for rid in self.slots if rid not in live]:
            self._free.append(self.slots.pop(rid))
            self.drafts.pop(rid, None)
            self.trees.pop(rid, None)
        reqs = [r for r in batch if r.num_generated < r.max_new_tokens]
        if not reqs:
            return {}
        for r in reqs:
            if r.request_id not in self.slots:
                self.slots[r.request_id] = self._free.pop()
        emitted = self.run([(r.request_id, r.seq_len) for r in reqs])
        return {r.request_id: n for r, n in zip(reqs, emitted)}

    def run(self, requests: list[tuple[int, int]]) -> list[int]:
        """One step for (request id, tokens known) pairs; returns tokens emitted per request."""
        for rid, _ in requests:
            if rid not in self.slots:
                self.slots[rid] = self._free.pop()
        if self.config.decoding_type == "DynamicTree":
            emitted = self._run_tree(requests)
        else:
            emitted = self._run_chain(requests)
        self.num_steps += len(requests)
        self.num_emitted += sum(emitted)
        return emitted

    # -- chain (MTP, MTPEagle) -----------------------------------------------------------
    def _handover(self, first: list[tuple[int, int]]) -> None:
        """What the context instance hands a request over with (one-model MTP runs there
        too): its K draft tokens, and the ring of its last K prompt tokens."""
        m, k = self.model, self.config.max_draft_len
        ids = torch.tensor([m.truth(rid, p) for rid, n in first for p in range(n - k, n)],
                           dtype=torch.int32, device=self.device)
        self.worker.init_ring(ids, torch.tensor([self.slots[rid] for rid, _ in first],
                                                dtype=torch.int32, device=self.device))
        for rid, n in first:
            self.drafts[rid] = [m.draft_token(rid, n + j) for j in range(k)]

    def _run_chain(self, requests):
        m, k = self.model, self.config.max_draft_len
        new = [(rid, n) for rid, n in requests if rid not in self.drafts]
        if new:
            self._handover(new)
        ids, truth, runner, drafts, steer = [], [], [], [], []
        for rid, n in requests:         # the last token and the K pending drafts
            d = self.drafts[rid]
            ids += [m.truth(rid, n - 1)] + d
            truth += [m.truth(rid, n + j) for j in range(k + 1)]
            runner += [m.runner_up(rid, n + j) for j in range(k + 1)]
            drafts += d
            # the next drafts, for every count this step may emit (1..K+1)
            steer.append([[m.draft_token(rid, n + e + j) for j in range(k)]
                          for e in range(1, k + 2)])
        dev, r = self.device, len(requests)
        t = StepTensors(
            input_ids=torch.tensor(ids, dtype=torch.int32, device=dev),
            seq_lens=torch.full((r,), k + 1, dtype=torch.int32, device=dev),
            slot_ids=torch.tensor([self.slots[rid] for rid, _ in requests], dtype=torch.int32,
                                  device=dev),
            truth=torch.tensor(truth, dtype=torch.int64, device=dev),
            runner=torch.tensor(runner, dtype=torch.int64, device=dev),
            drafts=torch.tensor(drafts, dtype=torch.int32, device=dev),
            steer=torch.tensor(steer, dtype=torch.int64, device=dev).view(r, k + 1, k),
            num_context=0)
        self.last_inputs = t
        num, next_drafts, _ = self.worker.forward(t)
        num, next_drafts = num.tolist(), next_drafts.tolist()
        for i, (rid, _) in enumerate(requests):
            self.drafts[rid] = next_drafts[i]
        return num

    # -- dynamic tree --------------------------------------------------------------------
    def _run_tree(self, requests):
        cfg, m = self.config, self.model
        n, k = cfg.tree_nodes, cfg.max_draft_len
        rows = []
        for rid, length in requests:
            tree = self.trees.get(rid)
            if tree is None:            # root only
                cand = [m.truth(rid, length - 1)] + [0] * (n - 1)
                nxt, sib = [-1] * n, [-1] * n
                anc = [[i == j or j == 0 for j in range(n)] for i in range(n)]
                depth = [0] + [1] * (n - 1)
            else:
                cand, nxt, sib, anc, depth = tree
            span = range(length - 1, length - 1 + 2 * k + 3)
            rows.append((cand, nxt, sib, anc, depth, [m.truth(rid, p) for p in span],
                         [m.draft_agrees(rid, p) for p in span], length - 1))
        dev = self.device

        def col(i, dtype):
            return torch.tensor([r[i] for r in rows], dtype=dtype, device=dev)
        t = TreeTensors(col(0, torch.int64), col(1, torch.int64), col(2, torch.int64),
                        col(3, torch.bool), col(4, torch.int64), col(5, torch.int64),
                        col(6, torch.bool), col(7, torch.int64),
                        torch.tensor([self.slots[rid] for rid, _ in requests], dtype=torch.int64,
                                     device=dev))
        emitted, tree, _ = self.worker.forward(t)
        emitted = emitted.tolist()
        drafts, nxt, sib, mask, depth = (x.tolist() for x in tree)
        for i, (rid, _) in enumerate(requests):
            self.trees[rid] = (drafts[i], nxt[i], sib[i], mask[i], depth[i])
        return emitted

    @property
    def acceptance_length(self) -> float:
        """Tokens emitted per request and step so far (AL)."""
        return self.num_emitted / max(1, self.num_steps)
