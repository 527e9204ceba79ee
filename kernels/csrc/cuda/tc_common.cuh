// What both tensor-core kernels (mma.sync in convt_tc.cu, wgmma in convt_wg.cu)
// share: 32-bit k-words of input channels, the packed-weight and channels-last
// layouts and the kernels that write them. Included into each .cu's anonymous
// namespace, so each keeps its own instantiations; the includer has already
// included convt_params.h, cuda_fp16.h, cuda_bf16.h and <cstdint>.
#pragma once

template <typename T>
struct Word;  // input channels per k-word and how to pack them
template <>
struct Word<float> {
  static constexpr int kChannels = 1;
};
template <>
struct Word<at::Half> {
  static constexpr int kChannels = 2;
};
template <>
struct Word<at::BFloat16> {
  static constexpr int kChannels = 2;
};

#include "mma_sync.cuh"  // tf32_round, and the mma.sync wrappers convt_tc.cu issues

// Low half holds the even channel: the mma's k-order within a register.
__device__ __forceinline__ uint32_t pack2(at::Half lo, at::Half hi) {
  return static_cast<uint32_t>(__half_as_ushort(lo)) | (static_cast<uint32_t>(__half_as_ushort(hi)) << 16);
}
__device__ __forceinline__ uint32_t pack2(at::BFloat16 lo, at::BFloat16 hi) {
  return static_cast<uint32_t>(lo.x) | (static_cast<uint32_t>(hi.x) << 16);
}

// One k-word of input channels ci, ci+1.. for a thread's pixel; `src` points at
// channel ci. TF32 mode rounds here, once per staged element, not per fragment.
template <typename T, bool kRound>
__device__ __forceinline__ uint32_t load_word(const T* src, int64_t plane, bool ok0, bool ok1);
template <>
__device__ __forceinline__ uint32_t load_word<float, true>(const float* src, int64_t, bool ok0, bool) {
  return ok0 ? tf32_round(__ldg(src)) : 0u;
}
template <>
__device__ __forceinline__ uint32_t load_word<float, false>(const float* src, int64_t, bool ok0, bool) {
  return ok0 ? __float_as_uint(__ldg(src)) : 0u;
}
template <>
__device__ __forceinline__ uint32_t load_word<at::Half, false>(const at::Half* src, int64_t plane, bool ok0, bool ok1) {
  const at::Half z(0.0f);
  return pack2(ok0 ? src[0] : z, ok1 ? src[plane] : z);
}
template <>
__device__ __forceinline__ uint32_t load_word<at::BFloat16, false>(const at::BFloat16* src, int64_t plane, bool ok0,
                                                                   bool ok1) {
  const at::BFloat16 z(0.0f);
  return pack2(ok0 ? src[0] : z, ok1 ? src[plane] : z);
}

// Geometry of the packed operands and the block grid, fixed per call.
struct TcGrid {
  int words;      // k-words per tap and group, padded to whole k-steps (8) or wgmma stages (16, 32)
  int co_pad;     // Cout/groups padded to a whole number of BN tiles
  int px_words;   // k-words per input pixel in the channels-last copy: groups * words
  int64_t co_tiles, phases_h, phases_w, pix_tiles, total;
};

// Weights [Cin, Cout/g, KH, KW] -> k-words [g][kh][kw][co_pad][word], zero-padded
// so every stage's slice is in bounds and 16-byte aligned, k contiguous per
// channel as ldmatrix wants the mma's B operand. Rounded to TF32 here for the
// TF32 mode; 3xTF32 keeps full fp32 and splits at the fragment.
template <typename T, bool kRound>
__global__ void pack_weights_kernel(const ConvTParams p, const TcGrid tg, const T* __restrict__ w,
                                    uint32_t* __restrict__ wp) {
  constexpr int CPW = Word<T>::kChannels;
  const int64_t total = p.groups * p.KH * p.KW * int64_t(tg.words) * tg.co_pad;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = i;
    const int64_t word = r % tg.words; r /= tg.words;
    const int64_t co = r % tg.co_pad; r /= tg.co_pad;
    const int64_t kw = r % p.KW; r /= p.KW;
    const int64_t kh = r % p.KH;
    const int64_t g = r / p.KH;
    const int64_t ci = word * CPW;
    const bool okc = co < p.Cout_g;
    const T* src = w + (((g * p.Cin_g + ci) * p.Cout_g + co) * p.KH + kh) * p.KW + kw;
    const int64_t plane = p.Cout_g * p.KH * p.KW;
    wp[i] = load_word<T, kRound>(src, plane, okc && ci < p.Cin_g, okc && ci + 1 < p.Cin_g);
  }
}

// Pixels a block of the transpose covers: four 32-pixel tiles, so each thread's
// channel arithmetic (a division) is paid once per 4 tiles.
constexpr int kTransposePixels = 128;

// x [N, Cin, H, W] -> [N, H, W, groups, words * CPW], zero in the padded channels,
// TF32-rounded in the TF32 mode: a tiled transpose, coalesced on both sides.
template <typename T, bool kRound>
__global__ void to_channels_last_kernel(const ConvTParams p, const TcGrid tg, const T* __restrict__ x,
                                        T* __restrict__ xt) {
  constexpr int CPW = Word<T>::kChannels;
  __shared__ T tile[32][33];
  // Channel counts fit 32 bits (the launchers check); int64 division per element
  // made this copy ALU-bound (v7 notes).
  const int cg_pad = tg.words * CPW, c_tot = static_cast<int>(p.groups) * cg_pad;
  const int64_t HW = p.Hin * p.Win, n = blockIdx.z;
  const int c0 = blockIdx.y * 32, tx = threadIdx.x, ty = threadIdx.y;
  const T* src[4];
  bool okc[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int c = c0 + ty + 8 * k, g = c / cg_pad, ci = c - g * cg_pad;
    okc[k] = c < c_tot && ci < p.Cin_g;
    src[k] = x + (n * p.Cin + int64_t(g) * p.Cin_g + ci) * HW;
  }
  const int64_t p_next = (int64_t(blockIdx.x) + 1) * kTransposePixels, p_end = p_next < HW ? p_next : HW;
  for (int64_t p0 = int64_t(blockIdx.x) * kTransposePixels; p0 < p_end; p0 += 32) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int64_t px = p0 + tx;
      T v = T(0.0f);
      if (okc[k] && px < HW) v = src[k][px];
      if constexpr (kRound) v = __uint_as_float(tf32_round(v));
      tile[ty + 8 * k][tx] = v;
    }
    __syncthreads();
    const int c = c0 + tx;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int64_t px = p0 + ty + 8 * k;
      if (px < HW && c < c_tot) xt[(n * HW + px) * c_tot + c] = tile[tx][ty + 8 * k];
    }
    __syncthreads();
  }
}

// The operand rewrites both tensor-core paths start with, queued on `stream`:
// weights packed to k-words [g][kh][kw][co_pad][word] and the input copied
// channels-last, as 32-bit words.
struct Staged {
  at::Tensor wp, xt;
  const uint32_t* weights() const { return reinterpret_cast<const uint32_t*>(wp.const_data_ptr<int>()); }
  const uint32_t* input() const { return reinterpret_cast<const uint32_t*>(xt.const_data_ptr<int>()); }
};

template <typename T, bool kRound>
Staged stage_operands(const ConvTParams& p, const TcGrid& tg, const T* x, const T* w, cudaStream_t stream,
                      const at::TensorOptions& opts) {
  constexpr int CPW = Word<T>::kChannels;
  Staged st;
  const int64_t packed = p.groups * p.KH * p.KW * int64_t(tg.words) * tg.co_pad;
  st.wp = at::empty({packed}, opts.dtype(at::kInt));
  const int pack_blocks = static_cast<int>(std::min<int64_t>((packed + 255) / 256, 4096));
  pack_weights_kernel<T, kRound><<<pack_blocks, 256, 0, stream>>>(
      p, tg, w, reinterpret_cast<uint32_t*>(st.wp.mutable_data_ptr<int>()));
  C10_CUDA_KERNEL_LAUNCH_CHECK();

  const int64_t HW = p.Hin * p.Win, c_tot = int64_t(tg.px_words) * CPW;
  st.xt = at::empty({p.N * HW * tg.px_words}, opts.dtype(at::kInt));
  const dim3 grid(static_cast<unsigned>((HW + kTransposePixels - 1) / kTransposePixels),
                  static_cast<unsigned>((c_tot + 31) / 32), static_cast<unsigned>(p.N));
  TORCH_CHECK(grid.y <= 65535 && grid.z <= 65535, "convt: too many channels or images for one launch");
  to_channels_last_kernel<T, kRound><<<grid, dim3(32, 8), 0, stream>>>(
      p, tg, x, reinterpret_cast<T*>(st.xt.mutable_data_ptr<int>()));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return st;
}
