// Hopper tensor-core kernel (sm_90a): the same per-phase implicit GEMM as
// convt_tc.cu, on wgmma fed by TMA. mma.sync on Hopper stalled on its ldmatrix
// fragments and the MIO queue at 41% tensor-pipe activity (kernel-notes v5);
// wgmma reads both operands straight from shared memory.
//
// Why TMA fits this op: within one output phase, consecutive phase pixels read
// consecutive input pixels, so the A tile of a tap is a plain box of the
// channels-last input shifted by the tap's offset, and TMA zero-fills the part
// of the box past the image edge — the taps' bounds checks cost nothing. A
// block's pixels are a box (images x rows x columns) of one phase; one producer
// warp streams (tap, k-chunk) stages into a ring of shared-memory slots guarded
// by mbarriers, and two consumer warpgroups run wgmma on them.
#include "convt_tc.h"

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <vector>

#include "tma_map.h"
#include "wgmma_ops.h"
#include "smem_attr.h"

namespace convt {
namespace {

#include "tc_common.cuh"

constexpr int kConsumerWarps = 8;  // two warpgroups
constexpr int kThreads = (kConsumerWarps + 1) * 32;


// A block's tile: each consumer warpgroup owns MSUB m64 slices of pixels x BN
// channels; NS stages in flight. Slots are sized for 128-byte rows (32 k-words).
template <int BN, int MSUB, int NS>
struct WgShape {
  static constexpr int BM = 2 * MSUB * 64;
  static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128;
  static constexpr int kBarrierOffset = NS * (A_BYTES + B_BYTES);
  static constexpr int kSmemBytes = kBarrierOffset + 2 * NS * 8 + 1024;  // + alignment slack
  static constexpr int kBlocksPerSm = kSmemBytes <= 113 * 1024 ? 2 : 1;
};

// Per-call geometry. The pixel box is 2^bw_log columns x 2^bh_log rows x
// 2^bn_log images of one phase (BM pixels in all).
struct WgGrid {
  int kws;       // k-words a stage: 32 (128-byte rows) or 16 (64-byte rows)
  int words;     // k-words per tap and group, a multiple of kws
  int co_pad;
  int bw_log, bh_log, bn_log;
  int w_tiles, h_tiles, n_tiles, co_tiles, phases_h, phases_w;
  int64_t total;
};

#include "wg_ptx.cuh"

__global__ void wg_probe_kernel(int* out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *out = 1;
#else
  *out = 0;
#endif
}

template <typename T, int BN, int MSUB, int NS>
__global__ void __launch_bounds__(kThreads, WgShape<BN, MSUB, NS>::kBlocksPerSm)
    convt_wg_kernel(const __grid_constant__ CUtensorMap xmap, const __grid_constant__ CUtensorMap wmap,
                    const ConvTParams p, const WgGrid gg, const T* __restrict__ bias, T* __restrict__ y) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using S = WgShape<BN, MSUB, NS>;
  using Op = typename wg::OpFor<T>::type;
  extern __shared__ uint8_t smem_raw[];
  // Swizzled TMA boxes and wgmma descriptors both assume 1024-byte-aligned atoms.
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* As = smem;
  uint8_t* Bs = smem + NS * S::A_BYTES;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + S::kBarrierOffset);
  uint64_t* empty = full + NS;

  // Phases fastest (their stores share output sectors in L2), then channel tiles
  // (they share the A boxes), then the pixel box.
  int64_t rest = blockIdx.x;
  const int rw = static_cast<int>(rest % gg.phases_w); rest /= gg.phases_w;
  const int rh = static_cast<int>(rest % gg.phases_h); rest /= gg.phases_h;
  const int co_tile = static_cast<int>(rest % gg.co_tiles); rest /= gg.co_tiles;
  const int wt = static_cast<int>(rest % gg.w_tiles); rest /= gg.w_tiles;
  const int ht = static_cast<int>(rest % gg.h_tiles); rest /= gg.h_tiles;
  const int nt = static_cast<int>(rest % gg.n_tiles);
  const int g = static_cast<int>(rest / gg.n_tiles);

  const int Mh = static_cast<int>(phase_extent(rh, p.sh, p.Hout)), Mw = static_cast<int>(phase_extent(rw, p.sw, p.Wout));
  const int qw0 = wt << gg.bw_log, qh0 = ht << gg.bh_log, n0 = nt << gg.bn_log;
  if (qw0 >= Mw || qh0 >= Mh) return;  // a smaller phase has fewer tiles than the largest one

  const PhaseTaps th = phase_taps(rh, p.ph, p.sh, p.dh, p.KH);
  const PhaseTaps tw = phase_taps(rw, p.pw, p.sw, p.dw, p.KW);
  const int nth = static_cast<int>(phase_tap_count(th, p.KH));
  const int ntw = static_cast<int>(phase_tap_count(tw, p.KW));
  const int chunks = gg.words / gg.kws;
  const int stages = nth * ntw * chunks;
  const int row_bytes = gg.kws * 4;

  // The warp index through a shuffle: warp-uniform to the compiler, so the role branch below is uniform and the
  // consumers' loop counters and descriptors live in uniform registers (without it, ~10 instructions a wgmma of
  // per-thread descriptor arithmetic and R2UR moves in the SASS).
  const int tid = threadIdx.x, warp = __shfl_sync(0xffffffffu, tid >> 5, 0), lane = tid & 31;
  if (tid == 0) {
    for (int i = 0; i < NS; ++i) {
      mbar_init(full + i, 1);
      mbar_init(empty + i, kConsumerWarps);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (warp == kConsumerWarps) {  // the producer
    if (lane != 0) return;
    const int bh0 = nth ? static_cast<int>(tap_offset(rh, p.ph, p.sh, p.dh, th.k0)) : 0;
    const int bw0 = ntw ? static_cast<int>(tap_offset(rw, p.pw, p.sw, p.dw, tw.k0)) : 0;
    const int dbh = static_cast<int>(th.step * p.dh / p.sh), dbw = static_cast<int>(tw.step * p.dw / p.sw);
    const int a_bytes = (S::BM * row_bytes), b_bytes = BN * row_bytes;
    int chunk = 0, ih = 0, iw = 0;  // the cursor: tap row, tap column, k-chunk
    for (int s = 0; s < stages; ++s) {
      const int slot = s % NS, round = s / NS;
      if (round > 0) mbar_wait(empty + slot, (round - 1) & 1);
      mbar_expect_tx(full + slot, a_bytes + b_bytes);
      const int kh = static_cast<int>(th.k0) + ih * static_cast<int>(th.step);
      const int kw = static_cast<int>(tw.k0) + iw * static_cast<int>(tw.step);
      tma_load_4d(As + slot * S::A_BYTES, &xmap, full + slot, g * gg.words + chunk * gg.kws, qw0 + bw0 - iw * dbw,
                  qh0 + bh0 - ih * dbh, n0);
      tma_load_2d(Bs + slot * S::B_BYTES, &wmap, full + slot, chunk * gg.kws,
                  ((g * static_cast<int>(p.KH) + kh) * static_cast<int>(p.KW) + kw) * gg.co_pad + co_tile * BN);
      if (++chunk == chunks) {
        chunk = 0;
        if (++iw == ntw) {
          iw = 0;
          ++ih;
        }
      }
    }
    return;
  }

  // The consumers: warpgroup wgi owns rows [wgi * MSUB * 64, (wgi + 1) * MSUB * 64).
  const int wgi = warp >> 2;
  float acc[MSUB][BN / 2];
  zero_acc(acc);
  const uint32_t hi = smem_desc_hi(row_bytes);
  const uint32_t a_lo = smem_desc_lo(smem_addr(As) + wgi * MSUB * 64 * row_bytes), b_lo = smem_desc_lo(smem_addr(Bs));
  for (int s = 0; s < stages; ++s) {
    const int slot = s % NS;
    mbar_wait(full + slot, (s / NS) & 1);
    const uint32_t da = a_lo + slot * (S::A_BYTES / 16), db = b_lo + slot * (S::B_BYTES / 16);
    wgmma_fence();
    // 8 k-words (32 bytes) per wgmma k-step; +2 advances a descriptor by 32 bytes.
    for (int k = 0; k < gg.kws / 8; ++k) {
#pragma unroll
      for (int j = 0; j < MSUB; ++j) {
        wg::Wgmma<Op, BN>::run(acc[j], desc_words(hi, da + j * (4 * row_bytes) + 2 * k), desc_words(hi, db + 2 * k), 1);
      }
    }
    wgmma_commit();
    wgmma_wait<1>();  // the previous stage's reads are done: hand its slot back
    if (s > 0 && lane == 0) mbar_arrive(empty + (s - 1) % NS);
  }
  wgmma_wait<0>();
#pragma unroll
  for (int j = 0; j < MSUB; ++j) fence_regs(acc[j]);

  // Fragment layout: warp w of the warpgroup holds rows 16w..16w+15 of each m64
  // slice; register 4c + {0,1,2,3} is (row l/4, col 8c + 2(l%4)), (.., +1),
  // (row l/4 + 8, ..), (.., +1).
  const int64_t plane = p.Hout * p.Wout;
  const int bw_mask = (1 << gg.bw_log) - 1, bh_mask = (1 << gg.bh_log) - 1;
#pragma unroll
  for (int j = 0; j < MSUB; ++j) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = (wgi * MSUB + j) * 64 + (warp & 3) * 16 + half * 8 + (lane >> 2);
      const int qw = qw0 + (r & bw_mask), qh = qh0 + ((r >> gg.bw_log) & bh_mask);
      const int n = n0 + (r >> (gg.bw_log + gg.bh_log));
      if (qw >= Mw || qh >= Mh || n >= p.N) continue;
      const int64_t oh = rh + int64_t(qh) * p.sh, ow = rw + int64_t(qw) * p.sw;
      T* yp = y + ((int64_t(n) * p.Cout + int64_t(g) * p.Cout_g) * p.Hout + oh) * p.Wout + ow;
#pragma unroll
      for (int c = 0; c < BN / 8; ++c) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int co = co_tile * BN + c * 8 + 2 * (lane & 3) + e;
          if (co < p.Cout_g) {
            const float bv = bias != nullptr ? static_cast<float>(bias[int64_t(g) * p.Cout_g + co]) : 0.f;
            yp[co * plane] = static_cast<T>(acc[j][c * 4 + half * 2 + e] + bv);
          }
        }
      }
    }
  }
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
}

// A tiled map of 32-bit words; dims and box innermost first, strides in bytes
// for dims 1.. . Rows of 128 or 64 bytes are swizzled to match wgmma's
// descriptors.
CUtensorMap make_map(const void* base, int rank, const cuuint64_t* dims, const cuuint64_t* strides,
                     const cuuint32_t* box, int row_bytes) {
  return encode_tiled_map(CU_TENSOR_MAP_DATA_TYPE_UINT32, rank, base, dims, strides, box,
                          row_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B);
}

int log2_ceil(int64_t v) {
  int l = 0;
  while ((int64_t(1) << l) < v) ++l;
  return l;
}

template <typename T, int BN, int MSUB, int NS>
void launch_shape(const ConvTParams& p, const T* x, const T* w, const T* b, T* y, cudaStream_t stream,
                  const at::TensorOptions& opts) {
  using S = WgShape<BN, MSUB, NS>;
  constexpr int CPW = Word<T>::kChannels;
  constexpr bool kRound = std::is_same<T, float>::value;  // the wgmma path runs fp32 only as TF32
  const int64_t raw_words = (p.Cin_g + CPW - 1) / CPW;
  WgGrid gg;
  gg.kws = raw_words <= 16 ? 16 : 32;
  gg.words = static_cast<int>((raw_words + gg.kws - 1) / gg.kws * gg.kws);
  gg.co_tiles = static_cast<int>((p.Cout_g + BN - 1) / BN);
  gg.co_pad = gg.co_tiles * BN;
  gg.phases_h = static_cast<int>(std::min(p.sh, p.Hout));
  gg.phases_w = static_cast<int>(std::min(p.sw, p.Wout));
  // The pixel box: as wide as the phase (up to 16 columns), then as tall (the
  // rest of BM), then whole images; powers of two so the epilogue decodes rows
  // with shifts.
  const int64_t Mh = phase_extent(0, p.sh, p.Hout), Mw = phase_extent(0, p.sw, p.Wout);
  const int bm_log = log2_ceil(S::BM);
  gg.bw_log = std::min(log2_ceil(Mw), 4);
  gg.bh_log = std::min(log2_ceil(Mh), bm_log - gg.bw_log);
  gg.bn_log = bm_log - gg.bw_log - gg.bh_log;
  gg.w_tiles = static_cast<int>((Mw + (1 << gg.bw_log) - 1) >> gg.bw_log);
  gg.h_tiles = static_cast<int>((Mh + (1 << gg.bh_log) - 1) >> gg.bh_log);
  gg.n_tiles = static_cast<int>((p.N + (1 << gg.bn_log) - 1) >> gg.bn_log);
  gg.total = p.groups * int64_t(gg.co_tiles) * gg.phases_h * gg.phases_w * gg.w_tiles * gg.h_tiles * gg.n_tiles;
  TORCH_CHECK(gg.total < (int64_t(1) << 31), "convt: too many output tiles for one launch");

  TcGrid tg;  // the layouts the shared pack and transpose kernels write
  tg.words = gg.words;
  tg.co_pad = gg.co_pad;
  tg.px_words = static_cast<int>(p.groups * gg.words);
  const int64_t rows = p.groups * p.KH * p.KW * gg.co_pad, HW = p.Hin * p.Win;
  const Staged st = stage_operands<T, kRound>(p, tg, x, w, stream, opts);

  const int row_bytes = gg.kws * 4;
  const cuuint64_t xdims[4] = {cuuint64_t(tg.px_words), cuuint64_t(p.Win), cuuint64_t(p.Hin), cuuint64_t(p.N)};
  const cuuint64_t xstrides[3] = {cuuint64_t(tg.px_words) * 4, cuuint64_t(p.Win * tg.px_words) * 4,
                                  cuuint64_t(HW * tg.px_words) * 4};
  const cuuint32_t xbox[4] = {cuuint32_t(gg.kws), 1u << gg.bw_log, 1u << gg.bh_log, 1u << gg.bn_log};
  const CUtensorMap xmap = make_map(st.input(), 4, xdims, xstrides, xbox, row_bytes);
  const cuuint64_t wdims[2] = {cuuint64_t(gg.words), cuuint64_t(rows)};
  const cuuint64_t wstrides[1] = {cuuint64_t(gg.words) * 4};
  const cuuint32_t wbox[2] = {cuuint32_t(gg.kws), cuuint32_t(BN)};
  const CUtensorMap wmap = make_map(st.weights(), 2, wdims, wstrides, wbox, row_bytes);

  auto kernel = convt_wg_kernel<T, BN, MSUB, NS>;
  allow_dynamic_smem(kernel, S::kSmemBytes);
  kernel<<<static_cast<unsigned>(gg.total), kThreads, S::kSmemBytes, stream>>>(xmap, wmap, p, gg, b, y);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The heuristic's tile: 128 x 256 past 64 output channels, unless that leaves the
// GPU short of blocks (DCGAN 512->256 at 4x4: 32 blocks; 64-wide tiles 0.084 vs
// 0.102 ms, docs/benchmarks/variants-v6.1-decoder.txt); else as wide as the channels.
WgTile auto_tile(const ConvTParams& p, int device) {
  const int64_t phases = std::min(p.sh, p.Hout) * std::min(p.sw, p.Wout);
  const int64_t tall_blocks = (p.N * max_phase_pixels(p) + 255) / 256 * phases * ((p.Cout_g + 127) / 128) * p.groups;
  const int sms = sm_count(device);
  if (p.Cout_g > 64 && tall_blocks >= 2 * sms) return WgTile::kBN128Tall;
  return p.Cout_g > 32 ? WgTile::kBN64 : WgTile::kBN32;
}

template <typename T>
void launch_typed(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                  at::Tensor& out, WgTile tile, cudaStream_t stream) {
  const T* xp = x.const_data_ptr<T>();
  const T* wp = w.const_data_ptr<T>();
  const T* bp = b.defined() ? b.const_data_ptr<T>() : nullptr;
  T* yp = out.mutable_data_ptr<T>();
  if (tile == WgTile::kAuto) tile = auto_tile(p, x.get_device());
  const auto o = x.options();
  switch (tile) {
    case WgTile::kBN32: launch_shape<T, 32, 2, 3>(p, xp, wp, bp, yp, stream, o); break;
    case WgTile::kBN64: launch_shape<T, 64, 1, 4>(p, xp, wp, bp, yp, stream, o); break;
    case WgTile::kBN64Tall: launch_shape<T, 64, 2, 5>(p, xp, wp, bp, yp, stream, o); break;
    case WgTile::kBN128Tall: launch_shape<T, 128, 2, 4>(p, xp, wp, bp, yp, stream, o); break;
    default: launch_shape<T, 128, 1, 3>(p, xp, wp, bp, yp, stream, o); break;
  }
}

bool probe(int device) {
  // Which cubin the driver loaded decides, not the device alone: a build
  // without sm_90a (or a PTX JIT for a newer GPU) has no wgmma.
  cudaDeviceProp prop;
  C10_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  if (prop.major != 9 || prop.minor != 0) return false;
  int* d = nullptr;
  int h = 0;
  C10_CUDA_CHECK(cudaMalloc(&d, sizeof(int)));
  wg_probe_kernel<<<1, 1>>>(d);
  const cudaError_t launched = cudaGetLastError();
  const cudaError_t copied = cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost);
  C10_CUDA_CHECK(cudaFree(d));
  C10_CUDA_CHECK(launched);
  C10_CUDA_CHECK(copied);
  return h == 1;
}

}  // namespace

bool wg_available(int device) {
  static std::mutex mu;
  static std::vector<int> known;  // -1 unknown, 0 no, 1 yes
  std::lock_guard<std::mutex> lock(mu);
  if (device >= static_cast<int>(known.size())) known.resize(device + 1, -1);
  if (known[device] < 0) {
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    C10_CUDA_CHECK(cudaStreamIsCapturing(c10::cuda::getCurrentCUDAStream(device), &capturing));
    if (capturing != cudaStreamCaptureStatusNone) return false;  // no synchronous probe inside a capture
    known[device] = probe(device) ? 1 : 0;
  }
  return known[device] == 1;
}

bool wg_supports(const ConvTParams& p, at::ScalarType dtype) {
  if (dtype != at::kFloat && dtype != at::kHalf && dtype != at::kBFloat16) return false;
  // 32-bit TMA coordinates and packed-weight rows, with room for padding.
  const int64_t lim = (int64_t(1) << 31) - 1;
  const int64_t words = p.Cin_g + 32, co = p.Cout_g + 128;
  return p.groups * words * 4 < lim && p.Hin + p.KH * p.dh < lim && p.Win + p.KW * p.dw < lim &&
         p.groups * p.KH * p.KW * co < lim && p.N * p.Hin * p.Win * p.groups * words < (int64_t(1) << 40);
}

void launch_wg(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
               WgTile tile, cudaStream_t stream) {
  switch (x.scalar_type()) {
    case at::kFloat: launch_typed<float>(p, x, w, b, out, tile, stream); break;
    case at::kHalf: launch_typed<at::Half>(p, x, w, b, out, tile, stream); break;
    case at::kBFloat16: launch_typed<at::BFloat16>(p, x, w, b, out, tile, stream); break;
    default: TORCH_CHECK(false, "convt: the wgmma path takes float32 (as TF32), float16 and bfloat16");
  }
}

}  // namespace convt
