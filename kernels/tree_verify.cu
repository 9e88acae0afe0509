// Greedy tree verification with SGLang's verify_tree_greedy semantics (DESIGN 3.7), one block
// per request.
//
// Walk from the root: at each depth try the children of the current node in sibling order; the
// first whose candidate equals the target at the current node is accepted and becomes current;
// stop when none matches or after S-1 steps. predicts[cur] = target[cur] along the accepted path
// (the last one is the bonus), -1 elsewhere; accept_index[b] = the path's global indices, root
// first, -1 padded; accept_token_num[b] = accepted drafts (bonus excluded).
// Global index = retrive_index[b, i], expected in [b*N, (b+1)*N): each block initialises its own
// slice of predicts. target_predict is indexed by global index (flat [bs*N]).
#include "common.cuh"

template <typename I>
__global__ void verify_tree_greedy(const I* __restrict__ candidates, const I* __restrict__ retrive_index,
                                   const I* __restrict__ next_token, const I* __restrict__ next_sibling,
                                   const I* __restrict__ target, int n, int s,
                                   int* __restrict__ predicts, int* __restrict__ accept_index,
                                   int* __restrict__ accept_num) {
  const int b = blockIdx.x;
  const i64 base = (i64)b * n;
  for (int i = threadIdx.x; i < n; i += blockDim.x) predicts[base + i] = -1;
  for (int j = threadIdx.x; j < s; j += blockDim.x) accept_index[(i64)b * s + j] = -1;
  __syncthreads();
  if (threadIdx.x != 0) return;
  i64 last = (i64)retrive_index[base];
  accept_index[(i64)b * s] = (int)last;
  int acc = 0;
  i64 cur = 0;
  for (int j = 1; j < s; ++j) {
    cur = (i64)next_token[base + cur];
    bool matched = false;
    // at most n siblings: a malformed sibling cycle cannot hang the walk
    for (int tries = 0; tries < n && cur >= 0 && cur < n; ++tries) {
      const i64 tgt = (i64)target[last];
      if ((i64)candidates[base + cur] == tgt) {
        predicts[last] = (int)tgt;
        ++acc;
        last = (i64)retrive_index[base + cur];
        accept_index[(i64)b * s + acc] = (int)last;
        matched = true;
        break;
      }
      cur = (i64)next_sibling[base + cur];
    }
    if (!matched) break;
  }
  accept_num[b] = acc;
  predicts[last] = (int)target[last];
}
