// Eagle dynamic-tree build in SGLang's layout (build_tree_kernel_efficient semantics), one block
// per request, one thread per tree node.
//
// Candidates of the drafting levels are numbered flat: level 0's top-k children of the root are
// 0..topk-1; level i >= 1 holds topk*topk candidates at topk + topk*topk*(i-1) + slot*topk + r,
// children of the level's expanded node `slot`. selected [N-1] (ascending) lists the candidates
// kept; node i >= 1 of the tree is selected[i-1], node 0 is the root (the last verified token).
// parent_list [Lp]: entry 0 stands for the root; entry 1 + topk*(i-1) + slot is the flat index
// of the node expanded as `slot` at level i. The parent of node i: p = selected[i-1] / topk;
// p == 0 -> the root; else the node whose candidate is parent_list[p]. A node whose parent is
// not in the tree (or p >= Lp, or a negative candidate) is an orphan: it is linked nowhere.
//
// Outputs (int64 unless said): retrive_index[b, i] = b*N + i; retrive_next_token[b, i] = first
// child or -1; retrive_next_sibling[b, i] = next sibling or -1 (children in increasing node
// order); positions[b, i] = seq_len[b] + depth(i) (an orphan's depth counts the nodes walked up
// to the break); tree_mask [b, N, N] uint8: row i marks i, its ancestors and the root.
#include "common.cuh"

__device__ __forceinline__ int parent_node(const i64* __restrict__ sel, const i64* __restrict__ plist,
                                           int lp, int topk, int n, int i) {
  if (sel[i - 1] < 0) return -1;
  const i64 p = sel[i - 1] / topk;
  if (p == 0) return 0;
  if (p < 0 || p >= lp) return -1;
  const i64 tok = plist[p];
  for (int k = 0; k < n - 1; ++k) {
    if (sel[k] == tok) return k + 1;
  }
  return -1;
}

__global__ void build_dynamic_tree(const i64* __restrict__ parent_list, int lp,
                                   const i64* __restrict__ selected, const i64* __restrict__ seq_len,
                                   int topk, int n, unsigned char* __restrict__ tree_mask,
                                   i64* __restrict__ positions, i64* __restrict__ retrive_index,
                                   i64* __restrict__ next_token, i64* __restrict__ next_sibling) {
  const int b = blockIdx.x;
  const i64* sel = selected + (i64)b * (n - 1);
  const i64* plist = parent_list + (i64)b * lp;
  const i64 base = (i64)b * n;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    retrive_index[base + i] = base + i;
    unsigned char* row = tree_mask + (base + i) * n;
    for (int j = 0; j < n; ++j) row[j] = 0;
    row[0] = 1;
    row[i] = 1;
    int depth = 0;
    int cur = i;
    while (cur != 0 && depth < n) {  // walk up, marking ancestors (bounded: no cycles)
      ++depth;
      const int p = parent_node(sel, plist, lp, topk, n, cur);
      if (p < 0) break;
      row[p] = 1;
      cur = p;
    }
    positions[base + i] = seq_len[b] + depth;
  }
  if (threadIdx.x == 0) {
    for (int i = 0; i < n; ++i) {
      next_token[base + i] = -1;
      next_sibling[base + i] = -1;
    }
    for (int i = n - 1; i > 0; --i) {  // prepend in decreasing order: siblings end up ascending
      const int p = parent_node(sel, plist, lp, topk, n, i);
      if (p < 0) continue;
      next_sibling[base + i] = next_token[base + p];
      next_token[base + p] = i;
    }
  }
}
