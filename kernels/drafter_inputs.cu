// MTP drafter-input preparation (DESIGN 3.6).
//
// Request q (context first, then generation), inputs at token offset off_q = sum seq_lens[<q]:
//   context:    ids = prompt[1:] + [accepted[q, 0]],          hidden = the prompt's P rows
//   generation: ids = past_tokens[slot][1:] + [accepted[q, num-1]], hidden = past_hidden[slot]
// Outputs are packed: context requests take P rows, generation requests K rows, in order.
// Grid (column chunks, requests, row groups): block z copies rows z, z + gridDim.z, ... of its
// columns; the blocks of chunk 0 / group 0 write the ids. W is the copy word (16/8/4/2 bytes).
#include "common.cuh"

template <typename W>
__global__ void prepare_drafter_inputs(const int* __restrict__ input_ids,
                                       const int* __restrict__ seq_lens, const W* __restrict__ hidden,
                                       const int* __restrict__ accepted,
                                       const int* __restrict__ num_accepted,
                                       const int* __restrict__ past_tokens,
                                       const W* __restrict__ past_hidden,
                                       const int* __restrict__ slot_ids, int num_context, int K,
                                       i64 row_words, int* __restrict__ out_ids,
                                       W* __restrict__ out_hidden) {
  __shared__ i64 scratch[33];
  const int q = blockIdx.y;
  i64 in_part = 0, out_part = 0;
  for (int i = threadIdx.x; i < q; i += blockDim.x) {
    in_part += seq_lens[i];
    out_part += i < num_context ? seq_lens[i] : K;
  }
  const i64 in_off = block_sum_i64(in_part, scratch);
  const i64 out_off = block_sum_i64(out_part, scratch);
  const bool ctx = q < num_context;
  const int rows = ctx ? seq_lens[q] : K;
  const i64 slot = ctx ? 0 : (i64)slot_ids[q];
  const int* acc = accepted + (i64)q * (K + 1);

  if (blockIdx.x == 0 && blockIdx.z == 0) {
    int* dst = out_ids + out_off;
    if (ctx) {
      for (int i = threadIdx.x; i + 1 < rows; i += blockDim.x) dst[i] = input_ids[in_off + i + 1];
      if (threadIdx.x == 0 && rows > 0) dst[rows - 1] = acc[0];
    } else {
      const int* ring = past_tokens + slot * K;
      for (int i = threadIdx.x; i + 1 < K; i += blockDim.x) dst[i] = ring[i + 1];
      if (threadIdx.x == 0 && K > 0) dst[K - 1] = acc[num_accepted[q] - 1];
    }
  }
  const i64 w = (i64)blockIdx.x * blockDim.x + threadIdx.x;
  if (w >= row_words) return;
  const W* src = ctx ? hidden + in_off * row_words : past_hidden + slot * K * row_words;
  W* dst = out_hidden + out_off * row_words;
  for (int i = blockIdx.z; i < rows; i += gridDim.z) {
    dst[(i64)i * row_words + w] = src[(i64)i * row_words + w];
  }
}
