// Thread-block cluster helpers (sm_90+), in PTX so that no header is needed. Compiled only when
// TRTSIM_HAS_CLUSTERS is 1; kernels built with cluster size 1 never call them.
#pragma once
#include "common.cuh"

#if TRTSIM_HAS_CLUSTERS
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// Every thread of every block of the cluster must call it (aligned barrier).
__device__ __forceinline__ void cluster_barrier() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;"
               ::: "memory");
}
// Address of `p` (in this block's shared memory) in the shared memory of cluster block `rank`.
__device__ __forceinline__ unsigned map_shared(const void* p, unsigned rank) {
  u64 gen = (u64)p, s;
  asm volatile("cvta.to.shared.u64 %0, %1;" : "=l"(s) : "l"(gen));
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"((unsigned)s), "r"(rank));
  return r;
}
__device__ __forceinline__ ArgMax load_remote(unsigned addr) {
  ArgMax a;
  asm volatile("ld.shared::cluster.s32 %0, [%1];" : "=r"(a.k) : "r"(addr) : "memory");
  asm volatile("ld.shared::cluster.s32 %0, [%1];" : "=r"(a.i) : "r"(addr + 4) : "memory");
  return a;
}
__device__ __forceinline__ u64 load_remote_u64(unsigned addr) {
  u64 v;
  asm volatile("ld.shared::cluster.u64 %0, [%1];" : "=l"(v) : "r"(addr) : "memory");
  return v;
}
#endif

// Rank of this block in its cluster of CS blocks (0 without clusters).
template <int CS> __device__ __forceinline__ int block_rank() {
#if TRTSIM_HAS_CLUSTERS
  return CS > 1 ? (int)cluster_rank() : 0;
#else
  return 0;
#endif
}

template <int CS> __device__ __forceinline__ void sync_cluster() {
#if TRTSIM_HAS_CLUSTERS
  if (CS > 1) cluster_barrier();
#endif
}

// part[r] of rank 0 combined with part[r] of the other ranks (call between two sync_cluster).
template <int CS> __device__ __forceinline__ ArgMax cluster_combine(ArgMax* part, int r) {
  ArgMax a = part[r];
#if TRTSIM_HAS_CLUSTERS
  for (int c = 1; c < CS; ++c) a = argmax_better(a, load_remote(map_shared(&part[r], c)));
#endif
  return a;
}

// part[r] of rank 0, a packed (key, index) pair, combined with part[r] of the other ranks.
template <int CS> __device__ __forceinline__ u64 cluster_max_u64(u64* part, int r) {
  u64 m = part[r];
#if TRTSIM_HAS_CLUSTERS
  for (int c = 1; c < CS; ++c) {
    const u64 o = load_remote_u64(map_shared(&part[r], c));
    m = o > m ? o : m;
  }
#endif
  return m;
}
