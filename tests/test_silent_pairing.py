"""DESIGN 4, reproduced with plain torch.distributed: with gloo, even under
TORCH_DISTRIBUTED_DEBUG=DETAIL, a rank that skips a pp all-gather has its next one pair
silently with its peer's pending one (same op, sequence and shape). trtsim's guard reports
the same program at the skipped call (test_process_backend, test_guard_reports)."""

import os

import pytest
import torch.multiprocessing as mp

pytestmark = pytest.mark.timeout(120)


def _rank(rank, port, out):
    os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    import torch
    import torch.distributed as dist
    from datetime import timedelta
    store = dist.TCPStore("127.0.0.1", port, 4, rank == 0, timeout=timedelta(seconds=30))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=4,
                            timeout=timedelta(seconds=10))
    pp = {r: dist.new_group([r % 2, r % 2 + 2]) for r in range(2)}   # tp2 x pp2: [0,2], [1,3]
    got = []
    try:
        for it in range(3):
            if rank == 2 and it == 1:
                continue                      # rank 2 skips one pp all-gather
            t = torch.tensor([it * 10 + rank])
            buf = [torch.zeros(1, dtype=torch.int64) for _ in range(2)]
            dist.all_gather(buf, t, group=pp[rank % 2])
            got.append([int(b) for b in buf])
        out.put((rank, "finished", got))
    except Exception as exc:  # noqa: BLE001 - rank 0 fails once its peer left
        out.put((rank, f"failed: {type(exc).__name__}", got))


def test_gloo_with_detail_pairs_the_skipped_call_silently():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(r, port, out)) for r in range(4)]
    for p in procs:
        p.start()
    results = {}
    for _ in range(4):
        rank, status, got = out.get(timeout=90)
        results[rank] = (status, got)
    for p in procs:
        p.join(30)
        if p.is_alive():
            p.kill()
    # ranks 1, 2 and 3 finished without an error
    assert all(results[r][0] == "finished" for r in (1, 2, 3))
    # rank 2's iteration-2 gather received rank 0's iteration-1 value: silently mispaired
    assert results[2][1][1] == [10, 22]
    assert results[0][0].startswith("failed") or results[0][1][1] == [10, 22]
