// Tensor-core kernel. Every output phase (outputs congruent mod stride) is a dense
// implicit GEMM: M = batch x phase pixels, N = Cout/groups, K = Cin/groups x the
// phase's taps. The input is first rewritten channels-last (NHWC, channels padded
// per group), so one pixel's K slice is contiguous: NCHW put every input channel
// of a stage in another 4 MB plane, and the v1 of this kernel, gathering from
// NCHW, ran at 8% of the tensor-core rate (docs/kernel-notes.md). A block owns BM
// pixels of one phase and BN output channels of one group and walks K one
// (tap, 16-32 k-words) stage at a time through a double-buffered cp.async pipeline, the
// taps' out-of-range reads zero-filled by the copy itself. Input channels travel
// as 32-bit "k-words": one fp32 (a TF32 operand), or a packed pair of fp16/bf16,
// so one fragment layout serves m16n8k8 TF32 and m16n8k16 fp16/bf16.
#include "convt_tc.h"
#include "smem_attr.h"

#include <c10/cuda/CUDAException.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

namespace convt {
namespace {

#include "tc_common.cuh"

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

__device__ __forceinline__ void cp_async16(uint32_t* dst, const uint32_t* src, bool valid) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  // src-size 0 writes 16 zero bytes: padding and taps past the image edge.
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Four 8x8 b16 matrices (8x4 k-words each) from shared memory; lane L gives the
// address of row L%8 of matrix L/8, and register j receives matrix j.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const uint32_t* addr) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(addr));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

// Tile shape per BN: 8 warps, each 64 pixels x 32 channels.
template <int BN>
struct TcShape {
  // Deep stages, double-buffered: per-stage costs (barrier, cursor, copy
  // addressing) were half the issued instructions at 16 k-words (v4 SASS).
  static constexpr int kStages = 2;
  static constexpr int WARPS_N = BN / 32, WARPS_M = kWarps / WARPS_N, BM = WARPS_M * 64;
  static constexpr int KWS = BM >= 512 ? 16 : 32;  // k-words per stage; a group's last may be short
  // Rows are pixels (A) and output channels (B), KWS k-words + 4 of padding, so
  // the 8 rows of each ldmatrix phase start in distinct 4-bank groups.
  static constexpr int AP = KWS + 4, BP = KWS + 4;
  static constexpr int CPP = KWS / 4;                       // 16-byte copies per row and stage
  // A: a thread copies 32 bytes (two 16-byte copies) of each of its pixels, so one
  // bound check and address serve two copies.
  static constexpr int TPP = CPP / 2;                       // threads per pixel
  static constexpr int ACP = BM * TPP / kThreads;           // pixels per thread and stage
  static constexpr int BCOPIES = BN * CPP;
  static constexpr int A_WORDS = BM * AP, B_WORDS = BN * BP;
  // 3xTF32 stages the weights' low halves beside them (split once, at packing).
  static constexpr int smem_bytes(bool split) { return kStages * (A_WORDS + B_WORDS * (split ? 2 : 1)) * 4; }
};

// 3xTF32: the packed weights' high TF32 halves in place, their remainders (rounded to TF32) after them, so
// the kernel loads both rather than splitting each B fragment again for every row block.
__global__ void split_weights_kernel(const uint32_t* __restrict__ wp, uint32_t* __restrict__ out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t hi, lo;
    split_tf32(wp[i], hi, lo);
    out[i] = hi;
    out[n + i] = lo;
  }
}

template <typename T, bool kSplit, int BN>
__global__ void __launch_bounds__(kThreads, 2)
    convt_tc_kernel(const ConvTParams p, const TcGrid tg, const uint32_t* __restrict__ xt,
                    const uint32_t* __restrict__ wp, const uint32_t* __restrict__ wl, const T* __restrict__ bias,
                    T* __restrict__ y) {
  using S = TcShape<BN>;
  constexpr int BM = S::BM, KWS = S::KWS, AP = S::AP, BP = S::BP, NS = S::kStages;
  extern __shared__ __align__(16) uint32_t smem[];
  uint32_t* As = smem;                    // [NS][BM][AP]
  uint32_t* Bs = smem + NS * S::A_WORDS;  // [NS][BN][BP], then for 3xTF32 the weights' low halves, the same

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g8 = lane >> 2, t4 = lane & 3;
  const int wm = warp % S::WARPS_M, wn = warp / S::WARPS_M;
  const int Hin = static_cast<int>(p.Hin), Win = static_cast<int>(p.Win);
  const int a_pair = tid % S::TPP;  // which 32 bytes of a pixel's stage slice this thread copies
  // ldmatrix row addresses. A, per m16 tile: matrices (rows 0-7 | 8-15) x (k 0-3 | 4-7)
  // are a0..a3. B, per pair of n8 tiles: (k 0-3 | 4-7) of the first, then the second.
  const int a_lane = (((lane >> 3) & 1) * 8 + (lane & 7)) * S::AP + (lane >> 4) * 4;
  const int b_lane = ((lane >> 4) * 8 + (lane & 7)) * S::BP + ((lane >> 3) & 1) * 4;

  for (int64_t blk = blockIdx.x; blk < tg.total; blk += gridDim.x) {
    int64_t rest = blk;
    const int rw = static_cast<int>(rest % tg.phases_w); rest /= tg.phases_w;
    const int rh = static_cast<int>(rest % tg.phases_h); rest /= tg.phases_h;
    const int pix_tile = static_cast<int>(rest % tg.pix_tiles); rest /= tg.pix_tiles;
    const int co_tile = static_cast<int>(rest % tg.co_tiles);
    const int g = static_cast<int>(rest / tg.co_tiles);

    // Everything per tile and per stage in 32 bits (the host guarantees the
    // ranges): v2 spent 20 instructions per mma, mostly int64 address and tap
    // arithmetic (ncu, docs/kernel-notes.md).
    const int Mh = static_cast<int>(phase_extent(rh, p.sh, p.Hout)), Mw = static_cast<int>(phase_extent(rw, p.sw, p.Wout));
    const int MP = Mh * Mw, M = static_cast<int>(p.N) * MP, m_base = pix_tile * BM;
    if (m_base >= M) continue;  // a smaller phase has fewer tiles than the largest one
    const PhaseTaps th = phase_taps(rh, p.ph, p.sh, p.dh, p.KH);
    const PhaseTaps tw = phase_taps(rw, p.pw, p.sw, p.dw, p.KW);
    const int nth = static_cast<int>(phase_tap_count(th, p.KH));
    const int ntw = static_cast<int>(phase_tap_count(tw, p.KW));
    const int chunks = (tg.words + KWS - 1) / KWS;
    const int last_words = tg.words - (chunks - 1) * KWS;  // a multiple of 8: one mma k-step
    const int stages = nth * ntw * chunks;
    // Successive taps of a phase move the input row by a fixed whole step.
    const int bh0 = nth ? static_cast<int>(tap_offset(rh, p.ph, p.sh, p.dh, th.k0)) : 0;
    const int bw0 = ntw ? static_cast<int>(tap_offset(rw, p.pw, p.sw, p.dw, tw.k0)) : 0;
    const int dbh = static_cast<int>(th.step * p.dh / p.sh), dbw = static_cast<int>(tw.step * p.dw / p.sw);
    const int wtap_h = static_cast<int>(th.step * p.KW) * tg.words * tg.co_pad;
    const int wtap_w = static_cast<int>(tw.step) * tg.words * tg.co_pad;
    const uint32_t* w_tile = wp + ((static_cast<int64_t>(g) * p.KH + th.k0) * p.KW + tw.k0) * tg.words * tg.co_pad +
                             co_tile * BN * tg.words;

    // The pixels whose slices this thread copies, fixed for the tile.
    int px_off[S::ACP], px_h[S::ACP], px_w[S::ACP];
#pragma unroll
    for (int i = 0; i < S::ACP; ++i) {
      const int m = m_base + (tid + i * kThreads) / S::TPP;
      const int n = m < M ? m / MP : 0, q = m < M ? m - n * MP : 0;
      px_w[i] = q % Mw;
      px_off[i] = ((n * Hin + q / Mw) * Win + px_w[i]) * tg.px_words + g * tg.words + a_pair * 8;
      px_h[i] = m < M ? q / Mw : -(1 << 29);  // a pixel past the end fails every bound check
    }

    // The copy cursor runs NS-1 stages ahead of the multiply: (tap row, tap column, chunk).
    int c_chunk = 0, c_tw = 0, c_bh = bh0, c_bw = bw0;
    const uint32_t* c_w = w_tile;
    const uint32_t* c_wrow = w_tile;
    auto issue = [&](int buf) {
      const int tap_off = (c_bh * Win + c_bw) * tg.px_words + c_chunk * KWS;
      const int valid = c_chunk == chunks - 1 ? last_words : KWS;
      uint32_t* a = As + buf * S::A_WORDS + (tid / S::TPP) * AP + a_pair * 8;
      if (a_pair * 8 < valid) {
#pragma unroll
        for (int i = 0; i < S::ACP; ++i) {
          const bool in = static_cast<unsigned>(px_h[i] + c_bh) < static_cast<unsigned>(Hin) &&
                          static_cast<unsigned>(px_w[i] + c_bw) < static_cast<unsigned>(Win);
          const uint32_t* src = in ? xt + (px_off[i] + tap_off) : xt;
          uint32_t* dst = a + i * (kThreads / S::TPP) * AP;
          cp_async16(dst, src, in);
          cp_async16(dst + 4, src + 4, in);
        }
      }
      const uint32_t* wsrc = c_w + c_chunk * KWS;
      uint32_t* b = Bs + buf * S::B_WORDS;
#pragma unroll
      for (int v = 0; v < (S::BCOPIES + kThreads - 1) / kThreads; ++v) {
        const int e = tid + v * kThreads;
        const int row = e / S::CPP, col = (e % S::CPP) * 4;
        if ((S::BCOPIES % kThreads == 0 || e < S::BCOPIES) && col < valid) {
          cp_async16(b + row * BP + col, wsrc + row * tg.words + col, true);
          if constexpr (kSplit) cp_async16(b + NS * S::B_WORDS + row * BP + col, wsrc + (wl - wp) + row * tg.words + col, true);
        }
      }
      if (++c_chunk == chunks) {
        c_chunk = 0;
        c_bw -= dbw;
        c_w += wtap_w;
        if (++c_tw == ntw) {
          c_tw = 0;
          c_bw = bw0;
          c_bh -= dbh;
          c_wrow += wtap_h;
          c_w = c_wrow;
        }
      }
    };

    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;

#pragma unroll
    for (int st = 0; st < NS - 1; ++st) {
      if (st < stages) issue(st);
      cp_async_commit();
    }
    int buf = 0, m_chunk = 0;  // the multiply's chunk, for the short last one
    for (int s = 0; s < stages; ++s) {
      cp_async_wait<NS - 2>();
      __syncthreads();  // stage s landed for every thread; stage s-1's buffer is free
      if (s + NS - 1 < stages) issue(buf == 0 ? NS - 1 : buf - 1);
      cp_async_commit();
      const uint32_t* a = As + buf * S::A_WORDS + (wm * 64) * AP + a_lane;
      const uint32_t* b = Bs + buf * S::B_WORDS + (wn * 32) * BP + b_lane;
      buf = buf == NS - 1 ? 0 : buf + 1;
      const int valid = m_chunk == chunks - 1 ? last_words : KWS;
      m_chunk = m_chunk == chunks - 1 ? 0 : m_chunk + 1;
      if constexpr (kSplit) {
        // 3xTF32: a*b ~ ahi*bhi + ahi*blo + alo*bhi, small terms first; the dropped alo*blo is below fp32
        // rounding. The tensor cores' fp32 sums do not round to nearest, so over a long reduction their error
        // grows with it (kb65, 1344 terms: 1.03e-5 relative on one seed): a row block's sums for this stage
        // start from zero and are added to the running ones with a rounded add. The weights come split.
        const uint32_t* bl_s = b + NS * S::B_WORDS;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          float part[4][4];
#pragma unroll
          for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) part[j][r] = 0.f;
#pragma unroll
          for (int ks = 0; ks < KWS; ks += 8) {
            if (ks >= valid) break;
            uint32_t bf[4][2], bl[4][2];
#pragma unroll
            for (int jj = 0; jj < 2; ++jj) {
              uint32_t r[4], q[4];
              ldmatrix_x4(r, b + jj * 16 * BP + ks);
              ldmatrix_x4(q, bl_s + jj * 16 * BP + ks);
              bf[2 * jj][0] = r[0];
              bf[2 * jj][1] = r[1];
              bf[2 * jj + 1][0] = r[2];
              bf[2 * jj + 1][1] = r[3];
              bl[2 * jj][0] = q[0];
              bl[2 * jj][1] = q[1];
              bl[2 * jj + 1][0] = q[2];
              bl[2 * jj + 1][1] = q[3];
            }
            uint32_t af[4], al[4];
            ldmatrix_x4(af, a + i * 16 * AP + ks);
#pragma unroll
            for (int r = 0; r < 4; ++r) split_tf32(af[r], af[r], al[r]);
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              Mma<T>::run(part[j], al, bf[j]);
              Mma<T>::run(part[j], af, bl[j]);
              Mma<T>::run(part[j], af, bf[j]);
            }
          }
#pragma unroll
          for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][j][r] += part[j][r];
        }
      } else {
#pragma unroll
        for (int ks = 0; ks < KWS; ks += 8) {
          if (ks >= valid) break;
          uint32_t bf[4][2];
#pragma unroll
          for (int jj = 0; jj < 2; ++jj) {
            uint32_t r[4];
            ldmatrix_x4(r, b + jj * 16 * BP + ks);
            bf[2 * jj][0] = r[0];
            bf[2 * jj][1] = r[1];
            bf[2 * jj + 1][0] = r[2];
            bf[2 * jj + 1][1] = r[3];
          }
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            uint32_t af[4];
            ldmatrix_x4(af, a + i * 16 * AP + ks);
#pragma unroll
            for (int j = 0; j < 4; ++j) Mma<T>::run(acc[i][j], af, bf[j]);
          }
        }
      }
    }
    cp_async_wait<0>();
    __syncthreads();  // the next tile's copies must not land on buffers still being read

    // Epilogue: fragment row g8 (+8) is a pixel, column 2*t4 (+1) a channel.
    const int64_t plane = p.Hout * p.Wout;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int m = m_base + wm * 64 + i * 16 + half * 8 + g8;
        if (m >= M) continue;
        const int n = m / MP, q = m - n * MP, qh = q / Mw;
        const int64_t oh = rh + int64_t(qh) * p.sh, ow = rw + int64_t(q - qh * Mw) * p.sw;
        T* yp = y + ((int64_t(n) * p.Cout + int64_t(g) * p.Cout_g) * p.Hout + oh) * p.Wout + ow;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            const int co = co_tile * BN + wn * 32 + j * 8 + 2 * t4 + c;
            if (co < p.Cout_g) {
              const float bv = bias != nullptr ? static_cast<float>(bias[int64_t(g) * p.Cout_g + co]) : 0.f;
              yp[co * plane] = static_cast<T>(acc[i][j][half * 2 + c] + bv);
            }
          }
        }
      }
    }
  }
}

template <typename T, bool kSplit, int BN>
void launch_tile(const ConvTParams& p, const T* x, const T* w, const T* b, T* y, cudaStream_t stream,
                 const at::TensorOptions& opts) {
  using S = TcShape<BN>;
  constexpr int CPW = Word<T>::kChannels;
  constexpr bool kRound = std::is_same<T, float>::value && !kSplit;
  TcGrid tg;
  const int64_t words = (p.Cin_g + CPW - 1) / CPW;
  tg.words = static_cast<int>((words + 7) / 8 * 8);
  tg.px_words = static_cast<int>(p.groups * tg.words);
  tg.co_tiles = (p.Cout_g + BN - 1) / BN;
  tg.co_pad = static_cast<int>(tg.co_tiles * BN);
  tg.phases_h = std::min(p.sh, p.Hout);
  tg.phases_w = std::min(p.sw, p.Wout);
  tg.pix_tiles = (p.N * max_phase_pixels(p) + S::BM - 1) / S::BM;
  tg.total = p.groups * tg.co_tiles * tg.phases_h * tg.phases_w * tg.pix_tiles;

  const Staged st = stage_operands<T, kRound>(p, tg, x, w, stream, opts);

  // Two blocks an SM (128 registers a thread) measured no slower than one block
  // with no register cap (v2, v3), and hides the barrier of each stage better.
  auto kernel = convt_tc_kernel<T, kSplit, BN>;
  constexpr int kSmem = S::smem_bytes(kSplit);
  allow_dynamic_smem(kernel, kSmem);
  const uint32_t *wh = st.weights(), *wl = nullptr;
  at::Tensor split_w;  // kept alive until the launch is queued; the caching allocator orders its reuse
  if constexpr (kSplit) {
    const int64_t n = st.wp.numel();
    split_w = at::empty({2 * n}, st.wp.options());
    uint32_t* sw = reinterpret_cast<uint32_t*>(split_w.mutable_data_ptr<int>());
    split_weights_kernel<<<static_cast<unsigned>(std::min<int64_t>((n + 255) / 256, 4096)), 256, 0, stream>>>(wh, sw, n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    wh = sw;
    wl = sw + n;
  }
  const int64_t grid = std::min<int64_t>(tg.total, int64_t(1) << 30);
  kernel<<<static_cast<unsigned>(grid), kThreads, kSmem, stream>>>(p, tg, st.input(), wh, wl, b, y);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T, bool kSplit>
void launch_typed(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                  at::Tensor& out, TcTile tile, cudaStream_t stream) {
  const T* xp = x.const_data_ptr<T>();
  const T* wp = w.const_data_ptr<T>();
  const T* bp = b.defined() ? b.const_data_ptr<T>() : nullptr;
  T* yp = out.mutable_data_ptr<T>();
  if (tile == TcTile::kAuto) {
    // The narrowest tile that covers the group's channels, 128 past 64: measured
    // best or within 5% on every KernelBench problem and decoder layer
    // (bench.variants, docs/kernel-notes.md).
    tile = p.Cout_g > 64 ? TcTile::kBN128 : p.Cout_g > 32 ? TcTile::kBN64 : TcTile::kBN32;
  }
  switch (tile) {
    case TcTile::kBN32: launch_tile<T, kSplit, 32>(p, xp, wp, bp, yp, stream, x.options()); break;
    case TcTile::kBN64: launch_tile<T, kSplit, 64>(p, xp, wp, bp, yp, stream, x.options()); break;
    default: launch_tile<T, kSplit, 128>(p, xp, wp, bp, yp, stream, x.options()); break;
  }
}

}  // namespace

bool tc_supports(const ConvTParams& p, at::ScalarType dtype) {
  if (dtype != at::kFloat && dtype != at::kHalf && dtype != at::kBFloat16) return false;
  // The kernel indexes the channels-last copy, the packed weights and the pixels
  // of a phase in 32 bits (with room for padding to whole tiles).
  const int64_t lim = (int64_t(1) << 31) - 1;
  const int64_t words = p.Cin_g + 15, co = p.Cout_g + 127;  // padded to whole stages and tiles, at most
  return p.N * p.Hin * p.Win * p.groups * words < lim && p.groups * p.KH * p.KW * words * co < lim &&
         p.N * max_phase_pixels(p) + 512 < lim;
}

void launch_tc(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
               Fp32Mode mode, TcTile tile, cudaStream_t stream) {
  switch (x.scalar_type()) {
    case at::kFloat:
      if (mode == Fp32Mode::k3xTF32) {
        launch_typed<float, true>(p, x, w, b, out, tile, stream);
      } else {
        launch_typed<float, false>(p, x, w, b, out, tile, stream);
      }
      break;
    case at::kHalf: launch_typed<at::Half, false>(p, x, w, b, out, tile, stream); break;
    case at::kBFloat16: launch_typed<at::BFloat16, false>(p, x, w, b, out, tile, stream); break;
    default: TORCH_CHECK(false, "convt: the tensor-core path takes float32, float16 and bfloat16");
  }
}

}  // namespace convt
