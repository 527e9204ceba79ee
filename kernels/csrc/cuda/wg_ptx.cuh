// PTX wrappers of the Hopper kernel (convt_wg.cu):
// mbarriers, TMA loads, wgmma descriptors and ordering. Included into each .cu's
// anonymous namespace after <cuda.h> and <cstdint>.
#pragma once

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ void mbar_init(uint64_t* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, int parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred P;\nmbarrier.try_wait.parity.shared::cta.b64 P, [%1], %2;\nselp.b32 %0, 1, 0, P;\n}\n"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
  } while (!done);
}
__device__ __forceinline__ void tma_load_4d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1, int c2,
                                            int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];\n" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(smem_addr(bar))
      : "memory");
}
__device__ __forceinline__ void tma_load_5d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1, int c2,
                                            int c3, int c4) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], "
      "[%7];\n" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(smem_addr(bar))
      : "memory");
}
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(smem_addr(bar))
      : "memory");
}

// K-major operand in the swizzled layout TMA wrote: rows of `row_bytes` (128 or
// 64), 8-row atoms `8 * row_bytes` apart; the leading offset is unused.
// Split in words so that a k-step's offset is one 32-bit add to the low word (the start address, 16-byte units,
// which a valid shared-memory address never carries out of); the high word is fixed by the layout.
// The low word: start address and leading byte offset.
__device__ __forceinline__ uint32_t desc_lo(uint32_t addr, int lead_bytes) {
  return ((addr & 0x3FFFF) >> 4) | (uint32_t(lead_bytes >> 4) << 16);
}
__device__ __forceinline__ uint32_t smem_desc_lo(uint32_t addr) { return desc_lo(addr, 16); }
__device__ __forceinline__ uint32_t smem_desc_hi(int row_bytes) {
  return uint32_t((8 * row_bytes) >> 4) | (uint32_t(row_bytes == 128 ? 1 : 2) << 30);
}
__device__ __forceinline__ uint64_t desc_words(uint32_t hi, uint32_t lo) { return (uint64_t(hi) << 32) | lo; }
__device__ __forceinline__ uint64_t smem_desc(const void* p, int row_bytes) {
  return desc_words(smem_desc_hi(row_bytes), smem_desc_lo(smem_addr(p)));
}

// st.shared's writes (weights staged by the threads) ordered before the async proxy's reads (wgmma's descriptors).
__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Warp-specialized blocks move registers from the producer warpgroup to the consumers'. The two counts must sum to
// at most the block's allocation (its launch bound's registers a thread x its threads); .inc blocks until the
// producer's .dec has released them.
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
// Keeps the compiler from moving accumulator reads or writes across the
// asynchronous wgmma that owns the registers.
template <int R>
__device__ __forceinline__ void fence_regs(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// Accumulators zeroed, each slice fenced as above, before a tile's first wgmma.
template <int M, int R>
__device__ __forceinline__ void zero_acc(float (&acc)[M][R]) {
#pragma unroll
  for (int j = 0; j < M; ++j) {
#pragma unroll
    for (int r = 0; r < R; ++r) acc[j][r] = 0.f;
    fence_regs(acc[j]);
  }
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

