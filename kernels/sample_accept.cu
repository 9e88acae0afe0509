// Fused greedy MTP sample-and-accept (DESIGN 3.6), one launch for the whole batch.
//
// Batch layout: requests [0, num_context) own one logits row each; generation request g owns the
// K+1 rows starting at num_context + g*(K+1) (the last accepted token, then K drafts).
//
// Work split: request q is handled by a cluster of CS blocks (CS = 1 without clusters). Block rank
// c scans slice c of every row of q as one flat range of 16-byte vectors (argmax_scan.cuh); its
// threads fold their running (key, index) pairs into per-row shared-memory slots with atomicMax
// (no barrier between rows). After a cluster barrier rank 0 reads the other ranks' slots through
// distributed shared memory, finishes the argmax, matches the drafts and writes the outputs.
//
// Outputs: accepted [R, K+1] int32, entries past num_accepted are -1; num_accepted [R] int32.
#include "common.cuh"
#include "cluster.cuh"
#include "argmax_scan.cuh"

#ifndef SA_BLOCK
#define SA_BLOCK 512
#endif
#define SA_MAX_ROWS 64

template <typename T, int CS>
__device__ __forceinline__ void sample_accept_body(
    const T* __restrict__ logits, i64 row_stride, int vocab, const int* __restrict__ draft,
    int num_context, int K, int* __restrict__ accepted, int* __restrict__ num_accepted) {
  __shared__ u64 part[SA_MAX_ROWS];  // this block's packed (key, index) for each row
  __shared__ int target[SA_MAX_ROWS];
  const int rank = block_rank<CS>();
  const int req = blockIdx.x / CS;
  const bool is_ctx = req < num_context;
  const int g = req - num_context;
  const i64 row0 = is_ctx ? (i64)req : (i64)num_context + (i64)g * (K + 1);
  const int nrows = is_ctx ? 1 : K + 1;
  for (int r = threadIdx.x; r < nrows; r += blockDim.x) part[r] = 0ull;
  __syncthreads();

  const T* base = logits + row0 * row_stride;
  if (((row_stride * (i64)sizeof(T)) & 15) == 0) {
    scan_rows_flat<T, CS>(base, row_stride, nrows, vocab, rank, part);
  } else {  // rows aligned differently: one row at a time
    for (int r = 0; r < nrows; ++r) flush_argmax(&part[r], scan_row<T, CS>(base + r * row_stride, vocab, rank));
  }
  __syncthreads();
  sync_cluster<CS>();  // every rank's part[] is complete and visible
  if (rank == 0) {
    if ((int)threadIdx.x < nrows) target[threadIdx.x] = packed_index(cluster_max_u64<CS>(part, threadIdx.x));
    __syncthreads();
    if (threadIdx.x == 0) {
      int n = 0;  // accepted drafts
      if (!is_ctx) {
        const int* d = draft + (i64)g * K;
        while (n < K && d[n] == target[n]) ++n;
      }
      int* out = accepted + (i64)req * (K + 1);
      for (int j = 0; j <= K; ++j) out[j] = j <= n ? target[j] : -1;
      num_accepted[req] = n + 1;
    }
  }
  sync_cluster<CS>();  // keep every rank's shared memory alive until rank 0 has read it
}

#define SA_PARAMS                                                                          \
  const T *__restrict__ logits, i64 row_stride, int vocab, const int *__restrict__ draft,  \
      int num_context, int K, int *__restrict__ accepted, int *__restrict__ num_accepted
#define SA_ARGS logits, row_stride, vocab, draft, num_context, K, accepted, num_accepted

template <typename T>
__global__ void __launch_bounds__(SA_BLOCK) sample_accept_c1(SA_PARAMS) {
  sample_accept_body<T, 1>(SA_ARGS);
}

#if TRTSIM_HAS_CLUSTERS
template <typename T>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(SA_BLOCK) sample_accept_c2(SA_PARAMS) {
  sample_accept_body<T, 2>(SA_ARGS);
}
template <typename T>
__global__ void __cluster_dims__(4, 1, 1) __launch_bounds__(SA_BLOCK) sample_accept_c4(SA_PARAMS) {
  sample_accept_body<T, 4>(SA_ARGS);
}
template <typename T>
__global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(SA_BLOCK) sample_accept_c8(SA_PARAMS) {
  sample_accept_body<T, 8>(SA_ARGS);
}
#endif
