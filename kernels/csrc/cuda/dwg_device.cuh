// Device helpers of the stride-1 wgmma kernels (convt_dwg.cu, convt_dwin.cu): shared-memory descriptors without
// swizzle, shared loads and stores, ldmatrix / stmatrix transposes, the bulk copy, paired output stores and the
// channels-as-N epilogue. Included into each .cu's anonymous namespace after cp_async.cuh, store_pair.cuh, wg_ptx.cuh
// and convt_dense.h (StrideOneDims).
#pragma once

// A stage's place in a ring of buffers (a chunk's pixel-major halo and weights, or a halo row's): its buffer, and how
// often the ring has wrapped (the parity of the phase its mbarriers are in).
struct RingPos {
  int b = 0, wrap = 0;
  __device__ __forceinline__ void next(int nb) {
    if (++b == nb) {
      b = 0;
      ++wrap;
    }
  }
  __device__ __forceinline__ int parity() const { return wrap & 1; }
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// A K-major descriptor without swizzle: the two k-adjacent core matrices `group_bytes` apart (B: the channel groups;
// v18's A: 1024), the m- or n-adjacent ones (the next 8 pixels or channels) 128 bytes apart. Any 16-byte-aligned
// start is a valid canonical layout.
// Its high word (the 128-byte stride) is the same for every operand here, so offsets go to the low word alone
// (wg_ptx.cuh's desc_lo, the leading offset `group_bytes`).
__device__ __forceinline__ uint64_t desc_of(uint32_t lo) { return desc_words(128 >> 4, lo); }
__device__ __forceinline__ uint64_t halo_desc(uint32_t addr, int group_bytes) {
  return desc_of(desc_lo(addr, group_bytes));
}
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ uint32_t lds32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&v)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
               : "r"(addr));
}
__device__ __forceinline__ void stsm_x4(uint32_t addr, const uint32_t (&v)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(v[0]), "r"(v[1]),
               "r"(v[2]), "r"(v[3])
               : "memory");
}
__device__ __forceinline__ void lds128(uint32_t (&a)[4], uint32_t addr) {
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(addr));
}
__device__ __forceinline__ void sts128(uint32_t addr, uint32_t a, uint32_t b, uint32_t c, uint32_t e) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(a), "r"(b), "r"(c), "r"(e) : "memory");
}
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void* src, int bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
      "l"(src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}
// Two adjacent outputs as the words one store writes: a half2 / bfloat162, or two fp32; the asm keeps every pair of a
// row converted (in its own registers) before the row's first store.
template <typename T>
__device__ __forceinline__ void pack_pair(uint32_t (&w)[sizeof(T) == 2 ? 1 : 2], float v0, float v1) {
  if constexpr (std::is_same_v<T, float>) {
    w[0] = __float_as_uint(v0);
    w[1] = __float_as_uint(v1);
    asm volatile("" : "+r"(w[0]), "+r"(w[1]));
  } else if constexpr (std::is_same_v<T, at::Half>) {
    const __half2 h = __floats2half2_rn(v0, v1);
    w[0] = reinterpret_cast<const uint32_t&>(h);
    asm volatile("" : "+r"(w[0]));
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(v0, v1);
    w[0] = reinterpret_cast<const uint32_t&>(h);
    asm volatile("" : "+r"(w[0]));
  }
}
template <typename T>
__device__ __forceinline__ void store_pair(T* y, const uint32_t (&w)[sizeof(T) == 2 ? 1 : 2]) {
  if constexpr (sizeof(T) == 2) {
    asm volatile("st.global.b32 [%0], %1;\n" ::"l"(y), "r"(w[0]) : "memory");
  } else {
    asm volatile("st.global.v2.b32 [%0], {%1, %2};\n" ::"l"(y), "r"(w[0]), "r"(w[1]) : "memory");
  }
}
// A buffer this thread read with ld.shared, released to the producer's next bulk copy into it (async proxy): each
// thread orders its own loads before its arrival (lane 0 alone after __syncwarp still raced in racecheck).
__device__ __forceinline__ void release_loads(uint64_t* bar) {
  fence_proxy_async();
  mbar_arrive(bar);
}
template <int N>
__device__ __forceinline__ void cp_wait_upto(int pending) {
  if constexpr (N > 0) {
    if (pending >= N) {
      cp_async_wait<N>();
      return;
    }
    cp_wait_upto<N - 1>(pending);
  } else {
    cp_async_wait<0>();
  }
}

// Channels as N (NC a tile): register NC/2 u + 4c + 2h + e of row j is (pixel 64u + 16wq + gq + 8h, channel
// 8c + 2tq + e), so a lane holds one pixel of two channels. A shuffle with the lane of the next pixel (gq ^ 1, four
// lanes away) makes each a pair of adjacent pixels of one channel, the even lane's channel 2tq and the odd one's
// 2tq + 1: a warp still stores 32-byte runs as paired stores, as v18 does.
template <typename T, int MS, int NP, int NC>
__device__ __forceinline__ void store_rows_sw(const StrideOneDims& d, int img, int g, int cot, int oh0, int ow0,
                                              const float (&acc)[MS][NP / 64 * NC / 2], const T* __restrict__ bias,
                                              T* __restrict__ y, bool pair, int wq, int gq, int tq) {
  constexpr int MT = NP / 64, NB = NC / 8, R = NC / 2;  // m-tiles a row, n-blocks of 8 channels, registers an m-tile
  const int odd = gq & 1;
  const int px0 = ow0 + 16 * wq + gq - odd;  // the lane's first pair; + 64u + 8h for the others
  const int co0 = cot * NC + 2 * tq + odd;   // the lane's channel of n-block 0; + 8c for the others
  float bv[NB];
#pragma unroll
  for (int c = 0; c < NB; ++c) {
    const int co = co0 + 8 * c;
    bv[c] = bias != nullptr && co < d.cout_g ? static_cast<float>(bias[int64_t(g) * d.cout_g + co]) : 0.f;
  }
  const bool whole = pair && ow0 + NP <= d.wout;
#pragma unroll
  for (int j = 0; j < MS; ++j) {
    const int oh = oh0 + j;
    if (oh >= d.hout) continue;  // the same for the whole warpgroup
#pragma unroll
    for (int c = 0; c < NB; ++c) {
      // A channel's pairs are shuffled and converted before any of them is stored (stores that each reuse one
      // register wait for the store before to read it), an n-block at a time (all of them at once spilled at NC 128).
      float lo[MT][2], hi[MT][2];
#pragma unroll
      for (int u = 0; u < MT; ++u)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float v0 = acc[j][R * u + 4 * c + 2 * h], v1 = acc[j][R * u + 4 * c + 2 * h + 1];
          const float r = __shfl_xor_sync(0xffffffffu, odd ? v0 : v1, 4);
          lo[u][h] = (odd ? r : v0) + bv[c];
          hi[u][h] = (odd ? v1 : r) + bv[c];
        }
      const int co = co0 + 8 * c;
      if (co >= d.cout_g) continue;
      T* yr = y + ((int64_t(img) * d.cout + int64_t(g) * d.cout_g + co) * d.hout + oh) * d.wout + px0;
      if (whole) {
        uint32_t pk[MT][2][sizeof(T) == 2 ? 1 : 2];
#pragma unroll
        for (int u = 0; u < MT; ++u)
#pragma unroll
          for (int h = 0; h < 2; ++h) pack_pair<T>(pk[u][h], lo[u][h], hi[u][h]);
#pragma unroll
        for (int u = 0; u < MT; ++u)
#pragma unroll
          for (int h = 0; h < 2; ++h) store_pair<T>(yr + 64 * u + 8 * h, pk[u][h]);
      } else {
#pragma unroll
        for (int u = 0; u < MT; ++u)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int px = px0 + 64 * u + 8 * h;
            T* yp = yr + 64 * u + 8 * h;
            if (pair && px + 1 < d.wout) {
              store2(yp, lo[u][h], hi[u][h]);
            } else {
              if (px < d.wout) yp[0] = static_cast<T>(lo[u][h]);
              if (px + 1 < d.wout) yp[1] = static_cast<T>(hi[u][h]);
            }
          }
      }
    }
  }
}
#endif
