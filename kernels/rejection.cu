// Chain rejection sampling with vLLM's semantics (DESIGN 3.7), one cluster of CS blocks per
// request (CS = 1 without clusters); the vocabulary of a row is split over the cluster's blocks.
//
// Request b owns drafts [off, off + n) of the flat arrays (off = sum num_draft[<b]).
// Random path: draft x_k (probability p = draft_probs[off+k, x_k], or 1 when draft_probs is
// null: one-hot drafts) is accepted when p > 0 and u_k * p <= q(x_k) (in double); at the first
// rejection the emitted token is argmax_i r_i / E[b, i] with r = max(q - p, 0) (one-hot drafts: q
// with q[x_k] set to 0), E ~ Exp(1), and the chain stops; if all n drafts are accepted the bonus
// token follows. Greedy path: the target token is argmax q (torch order), emitted at each
// position until it differs from the draft; the bonus follows if none differs.
// out [B, width] int32, -1 after the last emitted token. Every block walks the acceptance test
// itself (a few scalar reads), so the cluster agrees on the rejected position without a barrier.
#include "common.cuh"
#include "cluster.cuh"
#include "argmax_scan.cuh"

#define RS_BLOCK 512
#define RS_MAX_ROWS 64

// Four consecutive elements of T (aligned to 4 elements) widened to float.
template <typename T> __device__ __forceinline__ void load4(const T* p, i64 g, float* f);
template <> __device__ __forceinline__ void load4<float>(const float* p, i64 g, float* f) {
  const uint4 v = __ldg(reinterpret_cast<const uint4*>(p) + g);
  f[0] = __uint_as_float(v.x); f[1] = __uint_as_float(v.y);
  f[2] = __uint_as_float(v.z); f[3] = __uint_as_float(v.w);
}
template <> __device__ __forceinline__ void load4<bf16_t>(const bf16_t* p, i64 g, float* f) {
  const uint2 v = __ldg(reinterpret_cast<const uint2*>(p) + g);
  f[0] = __uint_as_float(v.x << 16); f[1] = __uint_as_float(v.x & 0xffff0000u);
  f[2] = __uint_as_float(v.y << 16); f[3] = __uint_as_float(v.y & 0xffff0000u);
}
template <> __device__ __forceinline__ void load4<f16_t>(const f16_t* p, i64 g, float* f) {
  const uint2 v = __ldg(reinterpret_cast<const uint2*>(p) + g);
  f[0] = f16_bits_to_float((unsigned short)(v.x & 0xffffu));
  f[1] = f16_bits_to_float((unsigned short)(v.x >> 16));
  f[2] = f16_bits_to_float((unsigned short)(v.y & 0xffffu));
  f[3] = f16_bits_to_float((unsigned short)(v.y >> 16));
}

// The recovery value of element i: max(q - p, 0) / e, or (i == x ? 0 : q) / e without p.
__device__ __forceinline__ int recovery_key(float q, float p, bool has_p, float e, int i, int x) {
  float r;
  if (has_p) {
    r = sub_f32(q, p);
    r = gt_f32(r, 0.0f) ? r : 0.0f;
  } else {
    r = i == x ? 0.0f : q;
  }
  return key_of(div_f32(r, e));
}

// Partial argmax of the recovery values of one row over this block's share.
template <typename T, int CS>
__device__ __forceinline__ ArgMax scan_recovery(const T* __restrict__ q, const T* __restrict__ p,
                                                const float* __restrict__ e, int x, int vocab,
                                                int rank, bool vec4) {
  ArgMax best = argmax_identity();
  const bool has_p = p != nullptr;
  if (vec4) {  // vocab % 4 == 0 and every row aligned to 4 elements
    const i64 ng = vocab / 4, g0 = ng * rank / CS, g1 = ng * (rank + 1) / CS;
    const i64 step = (i64)blockDim.x;
    for (i64 g = g0 + threadIdx.x; g < g1; g += 2 * step) {
      float fq[2][4], fp[2][4], fe[2][4];
#pragma unroll
      for (int u = 0; u < 2; ++u) {  // both groups' loads before any use
        const i64 gg = g + u * step;
        if (gg < g1) {
          load4<T>(q, gg, fq[u]);
          if (has_p) load4<T>(p, gg, fp[u]);
          const float4 ev = __ldg(reinterpret_cast<const float4*>(e) + gg);
          fe[u][0] = ev.x; fe[u][1] = ev.y; fe[u][2] = ev.z; fe[u][3] = ev.w;
        }
      }
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const i64 gg = g + u * step;
        if (gg < g1) {
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const int i = (int)(gg * 4) + j;
            argmax_visit(best, recovery_key(fq[u][j], has_p ? fp[u][j] : 0.0f, has_p, fe[u][j], i, x), i);
          }
        }
      }
    }
  } else {
    const i64 i0 = (i64)vocab * rank / CS, i1 = (i64)vocab * (rank + 1) / CS;
    for (i64 i = i0 + threadIdx.x; i < i1; i += blockDim.x) {
      const float pi = has_p ? to_float(p[i]) : 0.0f;
      argmax_visit(best, recovery_key(to_float(q[i]), pi, has_p, e[i], (int)i, x), (int)i);
    }
  }
  return best;
}

template <typename T, int CS>
__device__ __forceinline__ void rejection_body(
    const int* __restrict__ draft, const int* __restrict__ num_draft,
    const T* __restrict__ draft_probs, const T* __restrict__ target_probs,
    const int* __restrict__ bonus, const double* __restrict__ uniform,
    const float* __restrict__ noise, int vocab, int width, int greedy, int vec4,
    int* __restrict__ out) {
  __shared__ i64 scratch[33];
  __shared__ ArgMax red[32];
  __shared__ ArgMax part[RS_MAX_ROWS];
  __shared__ int s_rej;
  const int rank = block_rank<CS>();
  const int b = blockIdx.x / CS;
  i64 acc_off = 0;
  for (int i = threadIdx.x; i < b; i += blockDim.x) acc_off += num_draft[i];
  const i64 off = block_sum_i64(acc_off, scratch);
  const int n = num_draft[b];
  int* o = out + (i64)b * width;

  if (greedy) {
    for (int r = 0; r < n; ++r) {
      ArgMax a = scan_row<T, CS>(target_probs + (off + r) * vocab, vocab, rank);
      a = block_argmax(a, red);
      if (threadIdx.x == 0) part[r] = a;
    }
    sync_cluster<CS>();
    if (rank == 0 && threadIdx.x == 0) {
      int emitted = n + 1;
      for (int k = 0; k < n; ++k) {
        const int t = argmax_index(cluster_combine<CS>(part, k));
        o[k] = t;
        if (t != draft[off + k]) { emitted = k + 1; break; }
      }
      if (emitted == n + 1) o[n] = bonus[b];
      for (int j = emitted; j < width; ++j) o[j] = -1;
    }
    sync_cluster<CS>();
    return;
  }

  if (threadIdx.x == 0) {
    int rej = n;
    for (int k = 0; k < n; ++k) {
      const i64 row = off + k;
      const int x = draft[row];
      const float p = draft_probs ? to_float(draft_probs[row * vocab + x]) : 1.0f;
      const float q = to_float(target_probs[row * vocab + x]);
      if (!(gt_f32(p, 0.0f) && uniform[row] * f32_to_f64(p) <= f32_to_f64(q))) { rej = k; break; }
    }
    s_rej = rej;
  }
  __syncthreads();
  const int rej = s_rej;
  if (rej < n) {
    const i64 row = off + rej;
    ArgMax a = scan_recovery<T, CS>(target_probs + row * vocab,
                                    draft_probs ? draft_probs + row * vocab : nullptr,
                                    noise + (i64)b * vocab, draft[row], vocab, rank, vec4 != 0);
    a = block_argmax(a, red);
    if (threadIdx.x == 0) part[0] = a;
  }
  sync_cluster<CS>();
  if (rank == 0 && threadIdx.x == 0) {
    for (int k = 0; k < rej; ++k) o[k] = draft[off + k];
    o[rej] = rej < n ? argmax_index(cluster_combine<CS>(part, 0)) : bonus[b];
    for (int j = rej + 1; j < width; ++j) o[j] = -1;
  }
  sync_cluster<CS>();
}

#define RS_PARAMS                                                                              \
  const int *__restrict__ draft, const int *__restrict__ num_draft,                           \
      const T *__restrict__ draft_probs, const T *__restrict__ target_probs,                  \
      const int *__restrict__ bonus, const double *__restrict__ uniform,                      \
      const float *__restrict__ noise, int vocab, int width, int greedy, int vec4,            \
      int *__restrict__ out
#define RS_ARGS \
  draft, num_draft, draft_probs, target_probs, bonus, uniform, noise, vocab, width, greedy, vec4, out

template <typename T>
__global__ void __launch_bounds__(RS_BLOCK) rejection_c1(RS_PARAMS) {
  rejection_body<T, 1>(RS_ARGS);
}
#if TRTSIM_HAS_CLUSTERS
template <typename T>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(RS_BLOCK) rejection_c2(RS_PARAMS) {
  rejection_body<T, 2>(RS_ARGS);
}
template <typename T>
__global__ void __cluster_dims__(4, 1, 1) __launch_bounds__(RS_BLOCK) rejection_c4(RS_PARAMS) {
  rejection_body<T, 4>(RS_ARGS);
}
template <typename T>
__global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(RS_BLOCK) rejection_c8(RS_PARAMS) {
  rejection_body<T, 8>(RS_ARGS);
}
#endif
