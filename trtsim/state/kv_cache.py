"""A paged KV cache per rank: per-layer pools in TRT-LLM's HND layout.

Pool of a layer: ``[num_blocks, kv_factor, heads_local, tokens_per_block, head_dim]`` (kv_factor 2
for K and V, 1 for MLA's single latent cache). A rank holds the layers of its PP stage and the
KV heads of its TP rank (all heads under attention DP, the one latent head for MLA, replicated
heads when tp exceeds the head count). A request owns one block list per layer; a sliding
window makes the blocks before the window stale: they are evicted (freed, id -1) once the
prompt is in, and only the valid tail moves to the generation side:
``total = ceil(len / tpb)``, ``stale = max(0, (len + 1 - window) // tpb)``, valid = total - stale.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import torch

from ..checks import require_ints
from ..layout.mapping import Mapping
from ..layout.parallel import pp_layer_split

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


@dataclass(frozen=True)
class KvCacheConfig:
    """The KV shape of the model and the pool size (DESIGN 3.2's workload by default)."""

    num_layers: int = field(default=4, metadata={"help": "layers of the model"})
    num_kv_heads: int = field(default=4, metadata={"help": "KV heads (MLA: one latent head)"})
    head_dim: int = field(default=128, metadata={"help": "elements per head"})
    tokens_per_block: int = field(default=8, metadata={"help": "tokens per KV-cache block"})
    max_seq_len: int = field(default=256, metadata={"help": "longest sequence a request may reach"})
    windows: tuple[int, ...] | None = field(default=None, metadata={
        "key": "window", "convert": lambda v: (v,) if isinstance(v, int) and not isinstance(
            v, bool) else v, "type": "null, a positive integer or a list of them",
        "help": "attention window per layer, repeated over the layers (TRT-LLM's "
                "max_attention_window_vec); null: full attention"})
    is_mla: bool = field(default=False, metadata={"internal": True})   # from the deployment
    dtype: str = field(default="float16", metadata={"help": "KV dtype: float16, bfloat16, float32"})
    blocks_per_layer: int = field(default=256, metadata={"internal": True})  # executor.kv_blocks

    def __post_init__(self) -> None:
        require_ints(self, "num_layers", "num_kv_heads", "head_dim", "tokens_per_block",
                     "max_seq_len", "blocks_per_layer")
        if self.windows is not None and (not self.windows or any(
                not isinstance(w, int) or w < 1 for w in self.windows)):
            raise ValueError(f"windows={self.windows!r} must be positive integers")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype={self.dtype!r}; expected one of {', '.join(DTYPES)}")

    @property
    def kv_factor(self) -> int:
        return 1 if self.is_mla else 2

    @property
    def heads(self) -> int:
        return 1 if self.is_mla else self.num_kv_heads

    def window(self, layer: int) -> int | None:
        """The layer's attention window, None when it attends the whole sequence."""
        if self.windows is None:
            return None
        w = self.windows[layer % len(self.windows)]
        return None if w >= self.max_seq_len else w

    def num_blocks(self, length: int) -> int:
        return -(-length // self.tokens_per_block)

    def stale_blocks(self, layer: int, length: int) -> int:
        w = self.window(layer)
        return 0 if w is None else max(0, (length + 1 - w) // self.tokens_per_block)

    def valid_blocks(self, layer: int, length: int) -> int:
        return self.num_blocks(length) - self.stale_blocks(layer, length)


def head_range(num_heads: int, tp_size: int, tp_rank: int, attention_dp: bool) -> tuple[int, int]:
    """Global KV heads [start, stop) a TP rank holds: all under attention DP, a 1/tp share,
    or one replicated head when tp exceeds the head count."""
    if attention_dp or tp_size == 1:
        return 0, num_heads
    if num_heads >= tp_size:
        if num_heads % tp_size:
            raise ValueError(f"num_kv_heads={num_heads} is not divisible by tp={tp_size}")
        per = num_heads // tp_size
        return tp_rank * per, (tp_rank + 1) * per
    if tp_size % num_heads:
        raise ValueError(f"tp={tp_size} is not a multiple of num_kv_heads={num_heads}")
    head = tp_rank // (tp_size // num_heads)
    return head, head + 1


def kv_values(seed: int, request_id: int, layer: int, head: int, kv_factor: int, tokens: int,
              head_dim: int, dtype: torch.dtype) -> torch.Tensor:
    """What a prefill writes for one request, layer and global head: ``[kv_factor, tokens,
    head_dim]``, a pure function of its arguments, so TP replicas hold identical copies."""
    key = zlib.crc32(f"{seed}/{request_id}/{layer}/{head}".encode())
    gen = torch.Generator().manual_seed(key)
    return torch.randn(kv_factor, tokens, head_dim, generator=gen).to(dtype)


class KVCacheManager:
    """One rank's pools and block tables."""

    def __init__(self, config: KvCacheConfig, mapping: Mapping, attention_dp: bool):
        self.config = config
        self.mapping = mapping
        self.layers = pp_layer_split(config.num_layers, mapping.pp_size)[mapping.pp_rank]
        tp_rank = mapping.tp_rank
        self.heads = head_range(config.heads, mapping.tp_size, tp_rank, attention_dp or config.is_mla)
        dtype = DTYPES[config.dtype]
        # [blocks, kv_factor, heads, tokens_per_block, head_dim] per layer. Zeros, but only
        # as many blocks as have been handed out so far (``_reserve``): block ids are handed
        # out lowest first, so a pool never needs more rows than its peak use. A transfer's
        # pools of 256 blocks, zeroed whole, were half the time of a small scenario run.
        self._block_shape = (config.kv_factor, self.heads[1] - self.heads[0],
                             config.tokens_per_block, config.head_dim)
        self.pools = {layer: torch.zeros((0,) + self._block_shape, dtype=dtype)
                      for layer in self.layers}
        self._free = {layer: list(range(config.blocks_per_layer - 1, -1, -1))
                      for layer in self.layers}
        self.blocks: dict[int, dict[int, list[int]]] = {}   # request -> layer -> block ids
        self.lengths: dict[int, int] = {}

    # -- capacity ------------------------------------------------------------------------
    @property
    def num_free_blocks(self) -> int:
        return min((len(f) for f in self._free.values()), default=0)

    def blocks_needed(self, length: int) -> int:
        return self.config.num_blocks(length)

    def can_add_sequence(self, length: int) -> bool:
        return self.blocks_needed(length) <= self.num_free_blocks

    def has_sequence(self, request_id: int) -> bool:
        return request_id in self.blocks

    # -- block tables --------------------------------------------------------------------
    def add_sequence(self, request_id: int, length: int) -> None:
        if request_id in self.blocks:
            raise ValueError(f"request {request_id} already has KV blocks on this rank")
        if not self.can_add_sequence(length):
            raise MemoryError(f"KV cache full: request {request_id} needs "
                              f"{self.blocks_needed(length)} blocks, {self.num_free_blocks} free")
        n = self.blocks_needed(length)
        self.blocks[request_id] = {layer: self._take(layer, n) for layer in self.layers}
        self.lengths[request_id] = length

    def grow(self, request_id: int, new_length: int) -> None:
        """Extend a sequence (generation): allocate the blocks the new tokens need."""
        need = self.blocks_needed(new_length) - self.blocks_needed(self.lengths[request_id])
        if need > self.num_free_blocks:
            raise MemoryError(f"KV cache full while growing request {request_id}")
        for layer in self.layers:
            self.blocks[request_id][layer].extend(self._take(layer, need))
        self.lengths[request_id] = new_length

    def _take(self, layer: int, n: int) -> list[int]:
        """``n`` free block ids of ``layer``, its pool grown (with zeros) to hold them."""
        ids = [self._free[layer].pop() for _ in range(n)]
        pool = self.pools[layer]
        need = max(ids, default=-1) + 1
        if need > len(pool):
            rows = min(max(need, 2 * len(pool)), self.config.blocks_per_layer)
            grown = torch.zeros((rows,) + self._block_shape, dtype=pool.dtype)
            grown[:len(pool)] = pool
            self.pools[layer] = grown
        return ids

    def evict_stale(self, request_id: int) -> None:
        """Free the blocks before each windowed layer's window (they are never read again)."""
        length = self.lengths[request_id]
        for layer in self.layers:
            ids = self.blocks[request_id][layer]
            for i in range(self.config.stale_blocks(layer, length)):
                if ids[i] >= 0:
                    self._free[layer].append(ids[i])
                    ids[i] = -1

    def free_resources(self, request_id: int) -> None:
        for layer, ids in self.blocks.pop(request_id, {}).items():
            self._free[layer].extend(i for i in ids if i >= 0)
        self.lengths.pop(request_id, None)

    # -- data ----------------------------------------------------------------------------
    def valid_block_ids(self, request_id: int, layer: int) -> list[int]:
        """The non-stale tail of the request's blocks in ``layer`` (what a transfer moves)."""
        ids = self.blocks[request_id][layer]
        n = self.config.valid_blocks(layer, self.lengths[request_id])
        return ids[len(ids) - n:] if n else []

    def _prefill_blocks(self, request_id: int, layer: int, seed: int) -> torch.Tensor:
        """The blocks a prefill of the prompt writes in ``layer``: [n, kvf, heads, tpb, dim]."""
        cfg = self.config
        tpb, n = cfg.tokens_per_block, self.blocks_needed(self.lengths[request_id])
        heads = [kv_values(seed, request_id, layer, h, cfg.kv_factor, n * tpb, cfg.head_dim,
                           self.pools[layer].dtype) for h in range(*self.heads)]
        # [heads, kvf, n*tpb, dim] -> [n, kvf, heads, tpb, dim]
        data = torch.stack(heads).view(len(heads), cfg.kv_factor, n, tpb, cfg.head_dim)
        return data.permute(2, 1, 0, 3, 4)

    def write_prefill(self, request_id: int, seed: int) -> None:
        """Write the KV a prefill of this request produces into its blocks, then evict the
        blocks before each window."""
        for layer in self.layers:
            ids = torch.tensor(self.blocks[request_id][layer])
            self.pools[layer][ids] = self._prefill_blocks(request_id, layer, seed)
        self.evict_stale(request_id)

    def matches_prefill(self, request_id: int, seed: int) -> bool:
        """Whether the valid blocks hold, bit for bit, what the prefill wrote (the check a
        generation rank runs on received KV)."""
        for layer in self.layers:
            expect = self._prefill_blocks(request_id, layer, seed)
            n = self.config.valid_blocks(layer, self.lengths[request_id])
            if not torch.equal(self.read(request_id, layer, self.heads), expect[len(expect) - n:]):
                return False
        return True

    def read(self, request_id: int, layer: int, heads: tuple[int, int]) -> torch.Tensor:
        """Valid blocks of one layer for global heads [start, stop): [n, kvf, h, tpb, dim]."""
        ids = self.valid_block_ids(request_id, layer)
        lo, hi = heads[0] - self.heads[0], heads[1] - self.heads[0]
        return self.pools[layer][ids][:, :, lo:hi]

    def write(self, request_id: int, layer: int, heads: tuple[int, int],
              data: torch.Tensor) -> None:
        """Store received blocks of one layer for global heads [start, stop)."""
        ids = self.valid_block_ids(request_id, layer)
        lo, hi = heads[0] - self.heads[0], heads[1] - self.heads[0]
        self.pools[layer][ids, :, lo:hi] = data
