// MTP hidden-state ring update (DESIGN 3.6), in place.
//
// Per slot: past_tokens[K] and past_hidden[K, H]. Request q appends a rows to its slot's ring and
// keeps the newest K: ring <- last K of (ring ++ appended), where appended is
//   context request:    its whole prompt (a = seq_lens[q] tokens and hidden rows),
//   generation request: the first a = num_accepted[q] of its K+1 input tokens and hidden rows.
// With m = min(a, K): ring[i] = ring[i + m] for i < K - m (a left shift: source and destination
// overlap), ring[i] = appended[a - K + i] for i >= K - m.
//
// Grid (column chunks, requests). Each hidden column word is moved by one thread, which walks
// the ring rows in increasing order: row i + m is read before step i + m overwrites it, so the
// overlapping move is exact with no barrier. Tokens are moved by thread 0 of chunk 0 alike.
// Slots of one batch are distinct. W is the copy word (16, 8, 4 or 2 bytes) dividing a row.
#include "common.cuh"

template <typename W>
__global__ void update_hidden_ring(const int* __restrict__ input_ids, const int* __restrict__ seq_lens,
                                   const W* __restrict__ hidden, const int* __restrict__ num_accepted,
                                   int* __restrict__ past_tokens, W* __restrict__ past_hidden,
                                   const int* __restrict__ slot_ids, int num_context, int K,
                                   i64 row_words) {
  __shared__ i64 scratch[33];
  const int q = blockIdx.y;
  i64 part = 0;  // token offset of request q: sum of the earlier requests' lengths
  for (int i = threadIdx.x; i < q; i += blockDim.x) part += seq_lens[i];
  const i64 off = block_sum_i64(part, scratch);
  const int a = q < num_context ? seq_lens[q] : num_accepted[q];
  const int m = a < K ? a : K;
  const i64 slot = slot_ids[q];

  if (blockIdx.x == 0 && threadIdx.x == 0) {
    int* ring = past_tokens + slot * K;
    for (int i = 0; i < K; ++i) ring[i] = i < K - m ? ring[i + m] : input_ids[off + a - K + i];
  }
  const i64 w = (i64)blockIdx.x * blockDim.x + threadIdx.x;
  if (w >= row_words) return;
  W* ring = past_hidden + slot * K * row_words + w;
  const W* app = hidden + off * row_words + w;
  for (int i = 0; i < K; ++i) {
    ring[(i64)i * row_words] =
        i < K - m ? ring[(i64)(i + m) * row_words] : app[(i64)(a - K + i) * row_words];
  }
}
