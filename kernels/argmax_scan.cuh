// Partial argmax of one row over a block's share of the vocabulary (used by sample-and-accept
// and by the greedy rejection path).
//
// A row splits into an unaligned head, a body of 16-byte vectors and a tail. The body's vectors
// are split evenly over the CS ranks of a cluster; rank 0 also takes the head and the tail.
// Thread t visits vectors v0+t, v0+t+B, ... in increasing index order, loading SCAN_UNROLL of
// them before using any. Every element is read once.
#pragma once
#include "common.cuh"

#ifndef SCAN_UNROLL
#define SCAN_UNROLL 4
#endif

template <typename T, int CS>
__device__ __forceinline__ ArgMax scan_row(const T* __restrict__ rowp, int vocab, int rank) {
  constexpr int VN = Vec16<T>::N;
  ArgMax best = argmax_identity();
  const int mis = (int)(((u64)rowp) & 15u) / (int)sizeof(T);
  int head = mis ? (VN - mis) : 0;
  if (head > vocab) head = vocab;
  const i64 nvec = (i64)(vocab - head) / VN;
  const int body_end = head + (int)(nvec * VN);
  if (rank == 0 && (int)threadIdx.x < head) {
    argmax_visit(best, key_of(rowp[threadIdx.x]), threadIdx.x);
  }
  const i64 v0 = nvec * rank / CS, v1 = nvec * (rank + 1) / CS;
  const uint4* vp = reinterpret_cast<const uint4*>(rowp + head);
  const i64 step = (i64)blockDim.x;
  ArgMaxRun<T> run;
  run.init();
  for (i64 v = v0 + threadIdx.x; v < v1; v += step * SCAN_UNROLL) {
    uint4 buf[SCAN_UNROLL];
#pragma unroll
    for (int u = 0; u < SCAN_UNROLL; ++u) {
      const i64 k = v + u * step;
      if (k < v1) buf[u] = __ldg(vp + k);
    }
#pragma unroll
    for (int u = 0; u < SCAN_UNROLL; ++u) {
      const i64 k = v + u * step;
      if (k < v1) run.visit_vec(buf[u], (int)k);
    }
  }
  best = argmax_better(best, run.finish(vp, head));  // ties resolve by index
  if (rank == 0 && body_end + (int)threadIdx.x < vocab) {
    const int idx = body_end + threadIdx.x;
    argmax_visit(best, key_of(rowp[idx]), idx);
  }
  return best;
}

// ---- packed (key, index) pairs for shared-memory atomicMax -----------------------------------
// The high word orders by key, the low word by lower index (~index), so max() of two packed
// pairs is argmax_better of the pairs. 0 stands for "no element".
__device__ __forceinline__ u64 pack_argmax(ArgMax a) {
  return ((u64)((unsigned)a.k ^ 0x80000000u) << 32) | (u64)(~(unsigned)a.i);
}
__device__ __forceinline__ int packed_index(u64 p) { return (int)(~(unsigned)(p & 0xffffffffu)); }

__device__ __forceinline__ void flush_argmax(u64* slot, ArgMax a) {
  if (a.k != (int)0x80000000) atomicMax((unsigned long long*)slot, (unsigned long long)pack_argmax(a));
}

// Argmax of `nrows` rows (row r at base + r*stride, every row 16-byte aligned alike) over this
// rank's share, folded into part[r] with shared-memory atomics. The request's vectors are walked
// as one flat range (row-major), so a thread streams loads across row boundaries with no
// barrier; it flushes its running best when its row changes.
template <typename T, int CS>
__device__ __forceinline__ void scan_rows_flat(const T* __restrict__ base, i64 stride, int nrows,
                                               int vocab, int rank, u64* part) {
  constexpr int VN = Vec16<T>::N;
  const int mis = (int)(((u64)base) & 15u) / (int)sizeof(T);
  int head = mis ? (VN - mis) : 0;
  if (head > vocab) head = vocab;
  const int nvec = (vocab - head) / VN;
  const int body_end = head + nvec * VN;
  if (rank == 0) {  // unaligned head and tail elements of every row
    const int extra = head + (vocab - body_end);
    for (int t = threadIdx.x; t < nrows * extra; t += blockDim.x) {
      const int r = t / extra, e = t - r * extra;
      const int idx = e < head ? e : body_end + (e - head);
      ArgMax a;
      a.k = key_of(base[r * stride + idx]);
      a.i = idx;
      flush_argmax(&part[r], a);
    }
  }
  const int v0 = (int)((i64)nvec * rank / CS), v1 = (int)((i64)nvec * (rank + 1) / CS);
  const int per = v1 - v0;  // vectors of one row in this rank
  const int total = nrows * per;
  const int B = blockDim.x;
  if (total == 0) return;
  // Batches of SCAN_UNROLL vectors, software-pipelined: the next batch's loads are in flight
  // while the current batch is reduced.
  uint4 cur_buf[SCAN_UNROLL];
  int cur_r[SCAN_UNROLL], cur_k[SCAN_UNROLL];
  auto load_batch = [&](int j, uint4* buf, int* rr, int* kk) {
    int r = j / per, k = j - r * per;
#pragma unroll
    for (int u = 0; u < SCAN_UNROLL; ++u) {
      rr[u] = r;
      kk[u] = k;
      if (j + u * B < total) {
        const uint4* vp = reinterpret_cast<const uint4*>(base + r * stride + head);
        buf[u] = __ldg(vp + v0 + k);
      }
      k += B;
      while (k >= per) { k -= per; ++r; }
    }
  };
  // vector k of this rank's share of row r
  auto row_vecs = [&](int r) {
    return reinterpret_cast<const uint4*>(base + r * stride + head) + v0;
  };
  ArgMaxRun<T> run;
  run.init();
  int cur = 0;
  int j = threadIdx.x;
  if (j < total) load_batch(j, cur_buf, cur_r, cur_k);
  for (; j < total; j += B * SCAN_UNROLL) {
    uint4 nxt_buf[SCAN_UNROLL];
    int nxt_r[SCAN_UNROLL], nxt_k[SCAN_UNROLL];
    const int jn = j + B * SCAN_UNROLL;
    if (jn < total) load_batch(jn, nxt_buf, nxt_r, nxt_k);
#pragma unroll
    for (int u = 0; u < SCAN_UNROLL; ++u) {
      if (j + u * B < total) {
        if (cur_r[u] != cur) {
          flush_argmax(&part[cur], run.finish(row_vecs(cur), head + v0 * VN));
          run.init();
          cur = cur_r[u];
        }
        run.visit_vec(cur_buf[u], cur_k[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < SCAN_UNROLL; ++u) {
      cur_buf[u] = nxt_buf[u];
      cur_r[u] = nxt_r[u];
      cur_k[u] = nxt_k[u];
    }
  }
  flush_argmax(&part[cur], run.finish(row_vecs(cur), head + v0 * VN));
}
