// KV relocation of the accepted tree path to linear positions (dynamic-tree MTP / Eagle).
//
// The step wrote tree node i of request b at position past_len[b] + i of its slot. The accepted
// path (accept_index[b, 0..n], root first, n = accept_num[b], global index b*N + local) moves to
// positions past_len[b] + j: row j <- row local_j, for j = 1..n in increasing order (the root is
// already at j = 0). When node indices increase along the path (parents before children, as in
// build_dynamic_tree and SGLang), local_j >= j and no later source is overwritten first.
// Each copy word is moved by one thread walking j in order, so the GPU result equals a serial
// row-by-row copy for any input. Positions outside [0, max_seq) are skipped.
//
// kv: [P, num_slots, max_seq, row_words] words W (P = leading planes: layers, K/V, ...).
// Grid (column chunks, requests, planes).
#include "common.cuh"

template <typename W>
__global__ void relocate_kv(W* __restrict__ kv, i64 num_slots, i64 max_seq, i64 row_words,
                            const int* __restrict__ accept_index, int s,
                            const int* __restrict__ accept_num, const i64* __restrict__ past_len,
                            const int* __restrict__ slot_ids, int n_nodes) {
  const i64 w = (i64)blockIdx.x * blockDim.x + threadIdx.x;
  if (w >= row_words) return;
  const int b = blockIdx.y;
  const i64 slot = slot_ids ? (i64)slot_ids[b] : (i64)b;
  W* seq = kv + (((i64)blockIdx.z * num_slots + slot) * max_seq) * row_words + w;
  const i64 p0 = past_len[b];
  const int n = accept_num[b];
  for (int j = 1; j <= n && j < s; ++j) {
    const i64 local = (i64)accept_index[(i64)b * s + j] - (i64)b * n_nodes;
    const i64 src = p0 + local, dst = p0 + j;
    if (src < 0 || src >= max_seq || dst < 0 || dst >= max_seq || src == dst) continue;
    seq[dst * row_words] = seq[src * row_words];
  }
}
