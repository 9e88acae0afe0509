// Shared device helpers for the trtsim kernels.
//
// The sources are compiled at run time by NVRTC (through CuPy) and need no CUDA header: bf16 and
// fp16 values are kept as raw 16-bit words and widened to float exactly (bf16 by a shift, fp16 by
// the PTX cvt instruction), so every comparison made on the GPU equals the one the CPU twin makes
// on the same values upcast to fp32.
//
// The loader inlines this file into each kernel source (it replaces the #include line), so the
// text handed to NVRTC is self-contained and CuPy's binary cache keys on all of it.
#pragma once

typedef long long i64;
typedef unsigned long long u64;

struct bf16_t { unsigned short bits; };
struct f16_t { unsigned short bits; };

#define TRTSIM_FULL_MASK 0xffffffffu
#define TRTSIM_INT_MAX 0x7fffffff

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(bf16_t x) {
  return __uint_as_float(((unsigned)x.bits) << 16);
}
__device__ __forceinline__ float f16_bits_to_float(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ float to_float(f16_t x) { return f16_bits_to_float(x.bits); }

// fp32 arithmetic written in PTX, so that no flush-to-zero modifier is added (CuPy compiles with
// -ftz=true): subnormal values behave as IEEE 754 says, as on the CPU.
__device__ __forceinline__ float sub_f32(float a, float b) {
  float d;
  asm("sub.rn.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
}
__device__ __forceinline__ float div_f32(float a, float b) {
  float d;
  asm("div.rn.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
}
__device__ __forceinline__ bool gt_f32(float a, float b) {  // a > b (false when either is NaN)
  unsigned r;
  asm("{\n\t.reg .pred p;\n\tsetp.gt.f32 p, %1, %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(r) : "f"(a), "f"(b));
  return r != 0;
}
__device__ __forceinline__ double f32_to_f64(float x) {
  double d;
  asm("cvt.f64.f32 %0, %1;" : "=d"(d) : "f"(x));
  return d;
}

// Elements of T held by one 16-byte vector.
template <typename T> struct Vec16 { static constexpr int N = 16 / (int)sizeof(T); };

// ---- argmax with torch.argmax's order: NaN above everything, lowest index among equals --------
//
// Values are compared through monotone integer keys of their bits: a larger value has a larger
// key, -0 and +0 share one, every NaN sits above +inf. Integer comparisons are exact whatever
// flush-to-zero mode the compiler was given, so subnormal logits order as they do on the CPU.
__device__ __forceinline__ int key_f32bits(unsigned u) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return TRTSIM_INT_MAX;  // NaN
  if (u == 0x80000000u) u = 0u;                                 // -0 -> +0
  const int s = (int)u;
  return s >= 0 ? s : (s ^ 0x7fffffff);
}
__device__ __forceinline__ int key_f16bits(unsigned h) {
  h &= 0xffffu;
  if ((h & 0x7fffu) > 0x7c00u) return TRTSIM_INT_MAX;
  if (h == 0x8000u) h = 0u;
  const int s = (int)(short)h;
  return s >= 0 ? s : (s ^ 0x7fff);
}
__device__ __forceinline__ int key_of(float x) { return key_f32bits(__float_as_uint(x)); }
__device__ __forceinline__ int key_of(bf16_t x) { return key_f32bits(((unsigned)x.bits) << 16); }
__device__ __forceinline__ int key_of(f16_t x) { return key_f16bits(x.bits); }

// Key of element e (in index order) of a 16-byte vector of T.
template <typename T> __device__ __forceinline__ int vec_key(const uint4& v, int e);
template <> __device__ __forceinline__ int vec_key<float>(const uint4& v, int e) {
  const unsigned w[4] = {v.x, v.y, v.z, v.w};
  return key_f32bits(w[e]);
}
template <> __device__ __forceinline__ int vec_key<bf16_t>(const uint4& v, int e) {
  const unsigned w[4] = {v.x, v.y, v.z, v.w};
  const unsigned x = w[e >> 1];
  return key_f32bits((e & 1) ? (x & 0xffff0000u) : (x << 16));  // low half = lower index
}
template <> __device__ __forceinline__ int vec_key<f16_t>(const uint4& v, int e) {
  const unsigned w[4] = {v.x, v.y, v.z, v.w};
  const unsigned x = w[e >> 1];
  return key_f16bits((e & 1) ? (x >> 16) : x);
}

// The largest key of a vector. From sm_80 on, a tree of NaN-propagating packed max instructions
// (written in PTX, so no flush-to-zero modifier is added) finds the largest element in a few
// instructions; the key of that element is the vector's largest key.
template <typename T> __device__ __forceinline__ int vec_max_key(const uint4& v);
#if __CUDA_ARCH__ >= 800
__device__ __forceinline__ unsigned max_nan_bf16x2(unsigned a, unsigned b) {
  unsigned d;
  asm("max.NaN.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ unsigned max_nan_f16x2(unsigned a, unsigned b) {
  unsigned d;
  asm("max.NaN.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ float max_nan_f32(float a, float b) {
  float d;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
}
template <> __device__ __forceinline__ int vec_max_key<bf16_t>(const uint4& v) {
  unsigned m = max_nan_bf16x2(max_nan_bf16x2(v.x, v.y), max_nan_bf16x2(v.z, v.w));
  m = max_nan_bf16x2(m, __byte_perm(m, 0u, 0x1032));  // both halves hold the maximum
  return key_f32bits(m << 16);
}
template <> __device__ __forceinline__ int vec_max_key<f16_t>(const uint4& v) {
  unsigned m = max_nan_f16x2(max_nan_f16x2(v.x, v.y), max_nan_f16x2(v.z, v.w));
  m = max_nan_f16x2(m, __byte_perm(m, 0u, 0x1032));
  return key_f16bits(m);
}
template <> __device__ __forceinline__ int vec_max_key<float>(const uint4& v) {
  const float m = max_nan_f32(max_nan_f32(__uint_as_float(v.x), __uint_as_float(v.y)),
                              max_nan_f32(__uint_as_float(v.z), __uint_as_float(v.w)));
  return key_f32bits(__float_as_uint(m));
}
#else
template <typename T> __device__ __forceinline__ int vec_max_key(const uint4& v) {
  int k = vec_key<T>(v, 0);
#pragma unroll
  for (int e = 1; e < Vec16<T>::N; ++e) k = max(k, vec_key<T>(v, e));
  return k;
}
#endif

struct ArgMax {
  int k;  // key of the value
  int i;  // its index
};

__device__ __forceinline__ ArgMax argmax_identity() {
  ArgMax a;
  a.k = (int)0x80000000;  // below the key of -inf: any element wins
  a.i = TRTSIM_INT_MAX;
  return a;
}

// The better of two candidates; commutative and associative, so any reduction tree agrees.
__device__ __forceinline__ ArgMax argmax_better(ArgMax a, ArgMax b) {
  if (a.k != b.k) return a.k > b.k ? a : b;
  return a.i < b.i ? a : b;
}

// Running update for a thread that visits indices in increasing order: strict '>' keeps the
// first of equal values, and the first NaN is never replaced.
__device__ __forceinline__ void argmax_visit(ArgMax& a, int key, int idx) {
  if (key > a.k) {
    a.k = key;
    a.i = idx;
  }
}

// Visit the elements of one 16-byte vector whose first element has index `base`: the rare
// vector that beats the running best is searched for its first maximal element.
template <typename T>
__device__ __forceinline__ void argmax_visit_vec(ArgMax& a, const uint4& v, int base) {
  const int vk = vec_max_key<T>(v);
  if (vk > a.k) {
#pragma unroll
    for (int e = 0; e < Vec16<T>::N; ++e) {
      if (vec_key<T>(v, e) == vk) {
        a.k = vk;
        a.i = base + e;
        break;
      }
    }
  }
}

// A running argmax over the 16-byte vectors one thread visits in increasing index order.
// From sm_80 on the hot path is branch-free and works on value bits alone: the vector's maximum
// (packed NaN-propagating max instructions, -0 made +0) is merged into the best value so far,
// and a change of that value records the vector's position. Only when the run is finished is
// the recorded vector read again and searched for its first maximal element: the per-element
// search, which would make the threads of a warp diverge, runs once per run instead of at every
// new maximum. Equal maxima keep the earlier vector (the merge leaves the bits unchanged).
template <typename T>
struct ArgMaxRun {
#if __CUDA_ARCH__ >= 800
  unsigned bv;  // best value bits (both halves for 16-bit types); valid when pos >= 0
  int pos;      // position of the vector that holds it, -1 before the first vector
  __device__ __forceinline__ void init() { pos = -1; bv = 0u; }
  __device__ __forceinline__ void visit_vec(const uint4& v, int k) {
    const unsigned m = canonical_zero(vec_max_bits(v));
    const unsigned t = pos < 0 ? m : max_bits(m, bv);
    if (pos < 0 || t != bv) {
      bv = t;
      pos = k;
    }
  }
  // The best (key, index) of the run; `vecs` addresses vector positions, whose first element
  // has index first + pos * N.
  __device__ __forceinline__ ArgMax finish(const uint4* vecs, int first) const {
    ArgMax a = argmax_identity();
    if (pos < 0) return a;
    const uint4 v = __ldg(vecs + pos);
    const int bk = bits_key(bv);
#pragma unroll
    for (int e = Vec16<T>::N - 1; e >= 0; --e) {  // the first element with the best key
      if (vec_key<T>(v, e) == bk) a.i = first + pos * Vec16<T>::N + e;
    }
    a.k = bk;
    return a;
  }
  __device__ __forceinline__ static unsigned vec_max_bits(const uint4& v);
  __device__ __forceinline__ static unsigned max_bits(unsigned x, unsigned y);
  __device__ __forceinline__ static unsigned canonical_zero(unsigned m);
  __device__ __forceinline__ static int bits_key(unsigned m);
#else
  ArgMax a;
  __device__ __forceinline__ void init() { a = argmax_identity(); }
  __device__ __forceinline__ void visit_vec(const uint4& v, int k) {
    argmax_visit_vec<T>(a, v, k * Vec16<T>::N);  // index relative to `first`, fixed in finish
  }
  __device__ __forceinline__ ArgMax finish(const uint4*, int first) const {
    ArgMax r = a;
    if (r.i != TRTSIM_INT_MAX) r.i += first;
    return r;
  }
#endif
};

#if __CUDA_ARCH__ >= 800
template <> __device__ __forceinline__ unsigned ArgMaxRun<bf16_t>::vec_max_bits(const uint4& v) {
  const unsigned m = max_nan_bf16x2(max_nan_bf16x2(v.x, v.y), max_nan_bf16x2(v.z, v.w));
  return max_nan_bf16x2(m, __byte_perm(m, 0u, 0x1032));
}
template <> __device__ __forceinline__ unsigned ArgMaxRun<bf16_t>::max_bits(unsigned x, unsigned y) {
  return max_nan_bf16x2(x, y);
}
template <> __device__ __forceinline__ int ArgMaxRun<bf16_t>::bits_key(unsigned m) {
  return key_f32bits(m << 16);
}
template <> __device__ __forceinline__ unsigned ArgMaxRun<bf16_t>::canonical_zero(unsigned m) {
  return m == 0x80008000u ? 0u : m;
}
template <> __device__ __forceinline__ unsigned ArgMaxRun<f16_t>::vec_max_bits(const uint4& v) {
  const unsigned m = max_nan_f16x2(max_nan_f16x2(v.x, v.y), max_nan_f16x2(v.z, v.w));
  return max_nan_f16x2(m, __byte_perm(m, 0u, 0x1032));
}
template <> __device__ __forceinline__ unsigned ArgMaxRun<f16_t>::max_bits(unsigned x, unsigned y) {
  return max_nan_f16x2(x, y);
}
template <> __device__ __forceinline__ int ArgMaxRun<f16_t>::bits_key(unsigned m) {
  return key_f16bits(m);
}
template <> __device__ __forceinline__ unsigned ArgMaxRun<f16_t>::canonical_zero(unsigned m) {
  return m == 0x80008000u ? 0u : m;
}
template <> __device__ __forceinline__ unsigned ArgMaxRun<float>::vec_max_bits(const uint4& v) {
  return __float_as_uint(max_nan_f32(max_nan_f32(__uint_as_float(v.x), __uint_as_float(v.y)),
                                     max_nan_f32(__uint_as_float(v.z), __uint_as_float(v.w))));
}
template <> __device__ __forceinline__ unsigned ArgMaxRun<float>::max_bits(unsigned x, unsigned y) {
  return __float_as_uint(max_nan_f32(__uint_as_float(x), __uint_as_float(y)));
}
template <> __device__ __forceinline__ int ArgMaxRun<float>::bits_key(unsigned m) {
  return key_f32bits(m);
}
template <> __device__ __forceinline__ unsigned ArgMaxRun<float>::canonical_zero(unsigned m) {
  return m == 0x80000000u ? 0u : m;
}
#endif

__device__ __forceinline__ ArgMax warp_argmax(ArgMax a) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    ArgMax o;
    o.k = __shfl_xor_sync(TRTSIM_FULL_MASK, a.k, off);
    o.i = __shfl_xor_sync(TRTSIM_FULL_MASK, a.i, off);
    a = argmax_better(a, o);
  }
  return a;
}

// Block-wide argmax; every thread must call it. The result is valid in warp 0. `scratch` holds
// 32 entries of shared memory and is free again when the call returns.
__device__ __forceinline__ ArgMax block_argmax(ArgMax a, ArgMax* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int nwarps = (blockDim.x + 31) >> 5;
  a = warp_argmax(a);
  if (lane == 0) scratch[warp] = a;
  __syncthreads();
  if (warp == 0) {
    a = lane < nwarps ? scratch[lane] : argmax_identity();
    a = warp_argmax(a);
  }
  __syncthreads();
  return a;
}

__device__ __forceinline__ int argmax_index(ArgMax a) {
  return a.i == TRTSIM_INT_MAX ? 0 : a.i;  // only for an empty range
}

// Block-wide sum of an i64; every thread must call it; the result is returned to all threads.
__device__ __forceinline__ i64 block_sum_i64(i64 x, i64* scratch /*[33]*/) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int nwarps = (blockDim.x + 31) >> 5;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(TRTSIM_FULL_MASK, x, off);
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  if (threadIdx.x == 0) {
    i64 s = 0;
    for (int w = 0; w < nwarps; ++w) s += scratch[w];
    scratch[32] = s;
  }
  __syncthreads();
  const i64 total = scratch[32];
  __syncthreads();
  return total;
}

// 16-bit word for the copy kernels (uint4/uint2/unsigned are CUDA builtins).
struct u16w { unsigned short x; };
