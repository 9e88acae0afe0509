// Relaxed MTP acceptance for the thinking phase (DESIGN 3.6), one thread per request.
//
// topk_values/topk_indices [rows, TOPK]: per logits row (same row layout as sample-and-accept),
// the top-k softmax probabilities in descending order and their token ids.
// Generation request g: draft j is accepted when it equals a top-k index whose probability is at
// least p_top1 - delta[slot] (top-1 itself always qualifies); stop at the first rejection;
// accepted[0..n) = the drafts, accepted[n] = top-1 of row n, num = n + 1.
// Context request: accepted[0] = top-1 of its row, num = 1.
// Then, for every request, walking its accepted tokens in order: begin-thinking sets
// delta[slot] = relaxed_delta, end-thinking sets it to 0. Slots of one batch are distinct.
// accepted entries past num are -1.
#include "common.cuh"

template <typename T, typename I>
__global__ void relaxed_accept(const T* __restrict__ topk_values, const I* __restrict__ topk_indices,
                               int topk, const int* __restrict__ draft,
                               const int* __restrict__ slot_ids, float* __restrict__ delta_pool,
                               int num_context, int num_requests, int K, float relaxed_delta,
                               int begin_id, int end_id, int* __restrict__ accepted,
                               int* __restrict__ num_accepted) {
  const int req = blockIdx.x * blockDim.x + threadIdx.x;
  if (req >= num_requests) return;
  const int slot = slot_ids[req];
  int* out = accepted + (i64)req * (K + 1);
  int n = 0;
  if (req < num_context) {
    out[0] = (int)topk_indices[(i64)req * topk];
  } else {
    const int g = req - num_context;
    const i64 row0 = (i64)num_context + (i64)g * (K + 1);
    const int* d = draft + (i64)g * K;
    const float delta = delta_pool[slot];
    while (n < K) {
      const T* v = topk_values + (row0 + n) * topk;
      const I* ix = topk_indices + (row0 + n) * topk;
      const float thr = sub_f32(to_float(v[0]), delta);
      bool ok = false;
      for (int j = 0; j < topk; ++j) {
        if (j > 0 && gt_f32(thr, to_float(v[j]))) break;
        if (d[n] == (int)ix[j]) { ok = true; break; }
      }
      if (!ok) break;
      out[n] = d[n];
      ++n;
    }
    out[n] = (int)topk_indices[(row0 + n) * topk];
  }
  for (int j = n + 1; j <= K; ++j) out[j] = -1;
  num_accepted[req] = n + 1;
  // thinking-phase flips, in token order (the last flip wins)
  float delta = delta_pool[slot];
  bool changed = false;
  for (int j = 0; j <= n; ++j) {
    if (out[j] == begin_id) { delta = relaxed_delta; changed = true; }
    if (out[j] == end_id) { delta = 0.0f; changed = true; }
  }
  if (changed) delta_pool[slot] = delta;
}
