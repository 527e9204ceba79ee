// Hopper halo kernel (sm_90a, fp32 as TF32): the per-phase implicit GEMM of
// convt_wg.cu without its two costs (kernel-notes v6): the channels-last copy
// (a full extra pass over the input) and one A box per tap through L2.
//
// TMA reads the NCHW input itself: per 32-channel chunk, one halo box of
// (block rows + tap reach) x (64 + tap reach) pixels, laid out [channel][row][col],
// which every tap of the phase shares. A tap's A tile is that halo shifted by a
// pixel offset, which no wgmma shared-memory descriptor can express (K-major
// TF32 needs channels contiguous; swizzle atoms start on 8-row boundaries), so
// the consumers load A into registers (wgmma's register-A form) at any shift,
// rounding to TF32 on the way. The plane pitch is padded so those loads are
// free of bank conflicts. Weights stay K-major in shared memory, as in
// convt_wg.cu.
#include "convt_tc.h"

#include <c10/cuda/CUDAException.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "tma_map.h"
#include "wgmma_ops.h"
#include "smem_attr.h"

namespace convt {
namespace {

#include "tc_common.cuh"

constexpr int kConsumerWarps = 8;  // two warpgroups
constexpr int kThreads = (kConsumerWarps + 1) * 32;
constexpr int kCols = 64;   // an m64 slice: 64 columns of one phase row
constexpr int kChunk = 32;  // input channels a halo stage, one 128-byte weight row
constexpr int kMaxSmem = 227 * 1024;

#include "wg_ptx.cuh"

// BN output channels x (2 * MSUB) phase rows x 64 columns a tile; up to NH halo
// (gg.nh of them when smaller halos fit) and NW weight stages in flight.
template <int BN, int MSUB, int NH, int NW>
struct WghShape {
  static constexpr int kRows = 2 * MSUB;
  static constexpr int B_BYTES = BN * 128;
  static constexpr int kBarrierBytes = 2 * (NH + NW) * 8;
  // One halo slot and one m64 slice a warpgroup leave room for two blocks an SM.
  static constexpr int kBlocksPerSm = MSUB == 1 && NH == 1 ? 2 : 1;
  static int smem_bytes(int halo_slot, int nh) { return NW * B_BYTES + nh * halo_slot + kBarrierBytes + 1024; }
};

struct WghGrid {
  int hr, hc, plane;  // halo rows, columns, and plane pitch hr * hc (floats)
  int halo_bytes;     // what one halo load writes: kChunk planes
  int halo_slot;      // its shared-memory slot, rounded to 1024 bytes
  int nh;             // halo slots
  int chunks, co_pad;
  int w_tiles, h_tiles, co_tiles, phases_h, phases_w;
  int64_t total;
};

// One output tile: a phase, a channel tile, 2 * MSUB phase rows x 64 columns of
// one image and group, and the taps its phase takes.
struct TileWork {
  int rw, rh, co_tile, n, g, qw0, qh0, Mh, Mw;
  int nth, ntw, kh0, kw0, sth, stw, dbh, dbw;  // taps: count, first, step; input step between taps
  int x0a, shift, y0;                          // the halo box corner; columns it starts left of the taps' need
};

__device__ __forceinline__ bool decode_tile(int64_t t, const ConvTParams& p, const WghGrid& gg, int rows, TileWork& d) {
  // Phases fastest (their stores share output sectors), then channel tiles
  // (they share the halo in L2), then the pixel tile.
  d.rw = static_cast<int>(t % gg.phases_w); t /= gg.phases_w;
  d.rh = static_cast<int>(t % gg.phases_h); t /= gg.phases_h;
  d.co_tile = static_cast<int>(t % gg.co_tiles); t /= gg.co_tiles;
  const int wt = static_cast<int>(t % gg.w_tiles); t /= gg.w_tiles;
  const int ht = static_cast<int>(t % gg.h_tiles); t /= gg.h_tiles;
  d.n = static_cast<int>(t % p.N);
  d.g = static_cast<int>(t / p.N);
  d.Mh = static_cast<int>(phase_extent(d.rh, p.sh, p.Hout));
  d.Mw = static_cast<int>(phase_extent(d.rw, p.sw, p.Wout));
  d.qw0 = wt * kCols;
  d.qh0 = ht * rows;
  if (d.qw0 >= d.Mw || d.qh0 >= d.Mh) return false;  // a smaller phase has fewer tiles than the largest one
  const PhaseTaps th = phase_taps(d.rh, p.ph, p.sh, p.dh, p.KH);
  const PhaseTaps tw = phase_taps(d.rw, p.pw, p.sw, p.dw, p.KW);
  d.nth = static_cast<int>(phase_tap_count(th, p.KH));
  d.ntw = static_cast<int>(phase_tap_count(tw, p.KW));
  d.kh0 = static_cast<int>(th.k0);
  d.kw0 = static_cast<int>(tw.k0);
  d.sth = static_cast<int>(th.step);
  d.stw = static_cast<int>(tw.step);
  // Consecutive taps of a phase read inputs dbh rows / dbw columns apart.
  d.dbh = static_cast<int>(th.step * p.dh / p.sh);
  d.dbw = static_cast<int>(tw.step * p.dw / p.sw);
  if (d.nth == 0 || d.ntw == 0) {
    d.nth = d.ntw = 0;  // pure fill
    d.x0a = d.shift = d.y0 = 0;
    return true;
  }
  // The halo's corner: the last tap reads furthest up and left. TMA faults
  // (illegal instruction) unless the innermost start coordinate is 16-byte
  // aligned, so the box starts up to 3 columns further left.
  const int x0 = d.qw0 + static_cast<int>(tap_offset(d.rw, p.pw, p.sw, p.dw, tw.k0)) - (d.ntw - 1) * d.dbw;
  d.x0a = x0 & ~3;
  d.shift = x0 - d.x0a;
  d.y0 = d.qh0 + static_cast<int>(tap_offset(d.rh, p.ph, p.sh, p.dh, th.k0)) - (d.nth - 1) * d.dbh;
  return true;
}

// Persistent: each block walks tiles blockIdx.x, + gridDim.x, ...; the stage
// counters run on across tiles, so the producer loads the next tile's halo and
// weights while the consumers finish this one.
template <int BN, int MSUB, int NH, int NW>
__global__ void __launch_bounds__(kThreads, WghShape<BN, MSUB, NH, NW>::kBlocksPerSm)
    convt_wgh_kernel(const __grid_constant__ CUtensorMap xmap, const __grid_constant__ CUtensorMap wmap,
                     const ConvTParams p, const WghGrid gg, const float* __restrict__ bias, float* __restrict__ y) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using S = WghShape<BN, MSUB, NH, NW>;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint8_t* Bs = smem;  // swizzled weight rows: 1024-byte-aligned slots
  const float* Hs = reinterpret_cast<const float*>(smem + NW * S::B_BYTES);
  uint64_t* wfull = reinterpret_cast<uint64_t*>(smem + NW * S::B_BYTES + gg.nh * gg.halo_slot);
  uint64_t* wempty = wfull + NW;
  uint64_t* hfull = wempty + NW;
  uint64_t* hempty = hfull + NH;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  if (tid == 0) {
    for (int i = 0; i < NW; ++i) {
      mbar_init(wfull + i, 1);
      mbar_init(wempty + i, kConsumerWarps);
    }
    for (int i = 0; i < NH; ++i) {
      mbar_init(hfull + i, 1);
      mbar_init(hempty + i, kConsumerWarps);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  TileWork d;
  int s = 0, h = 0;  // weight stages and halo chunks so far, in both roles
  if (warp == kConsumerWarps) {  // the producer: one thread issues every load
    if (lane != 0) return;
    for (int64_t t = blockIdx.x; t < gg.total; t += gridDim.x) {
      if (!decode_tile(t, p, gg, S::kRows, d) || d.nth == 0) continue;
      for (int c = 0; c < gg.chunks; ++c, ++h) {
        const int hs = h % gg.nh;
        if (h >= gg.nh) mbar_wait(hempty + hs, (h / gg.nh - 1) & 1);
        mbar_expect_tx(hfull + hs, gg.halo_bytes);
        tma_load_5d(const_cast<float*>(Hs) + hs * (gg.halo_slot / 4), &xmap, hfull + hs, d.x0a, d.y0, c * kChunk,
                    d.g, d.n);
        for (int ih = 0; ih < d.nth; ++ih) {
          for (int iw = 0; iw < d.ntw; ++iw, ++s) {
            const int ws = s % NW;
            if (s >= NW) mbar_wait(wempty + ws, (s / NW - 1) & 1);
            mbar_expect_tx(wfull + ws, S::B_BYTES);
            const int kh = d.kh0 + ih * d.sth, kw = d.kw0 + iw * d.stw;
            tma_load_2d(Bs + ws * S::B_BYTES, &wmap, wfull + ws, c * kChunk,
                        ((d.g * static_cast<int>(p.KH) + kh) * static_cast<int>(p.KW) + kw) * gg.co_pad +
                            d.co_tile * BN);
          }
        }
      }
    }
    return;
  }

  // The consumers: warpgroup wgi owns phase rows qh0 + wgi * MSUB + j. Thread
  // (warp wq of its group, lane) loads A rows 16 wq + lane/4 (+8) and k lane%4
  // (+4) of each m64 x k8 step, as wgmma's register-A layout has them.
  const int wgi = warp >> 2, wq = warp & 3, g4 = lane >> 2, t4 = lane & 3;
  const int64_t plane = p.Hout * p.Wout;
  for (int64_t t = blockIdx.x; t < gg.total; t += gridDim.x) {
    if (!decode_tile(t, p, gg, S::kRows, d)) continue;
    float acc[MSUB][BN / 2];
    zero_acc(acc);
    const int a_thread = t4 * gg.plane + wgi * MSUB * gg.hc + wq * 16 + g4 + d.shift;
    for (int c = 0; c < gg.chunks && d.nth > 0; ++c, ++h) {
      const int hs = h % gg.nh;
      const float* halo = Hs + hs * (gg.halo_slot / 4) + a_thread;
      mbar_wait(hfull + hs, (h / gg.nh) & 1);
      for (int ih = 0; ih < d.nth; ++ih) {
        for (int iw = 0; iw < d.ntw; ++iw, ++s) {
          // A registers are written only while none of this warpgroup's wgmma is in
          // flight: ptxas serializes every wgmma otherwise. The other warpgroup's
          // wgmma keeps the tensor cores busy over these loads.
          const float* a = halo + (d.nth - 1 - ih) * d.dbh * gg.hc + (d.ntw - 1 - iw) * d.dbw;
          uint32_t fr[kChunk / 8][MSUB][4];
#pragma unroll
          for (int k = 0; k < kChunk / 8; ++k) {
#pragma unroll
            for (int j = 0; j < MSUB; ++j) {
              const float* aj = a + j * gg.hc + 8 * k * gg.plane;
              fr[k][j][0] = tf32_round(aj[0]);
              fr[k][j][1] = tf32_round(aj[8]);
              fr[k][j][2] = tf32_round(aj[4 * gg.plane]);
              fr[k][j][3] = tf32_round(aj[4 * gg.plane + 8]);
            }
          }
          const int ws = s % NW;
          mbar_wait(wfull + ws, (s / NW) & 1);
          const uint64_t db = smem_desc(Bs + ws * S::B_BYTES, 128);
          wgmma_fence();
#pragma unroll
          for (int k = 0; k < kChunk / 8; ++k) {
#pragma unroll
            for (int j = 0; j < MSUB; ++j) wg::WgmmaRs<wg::Tf32, BN>::run(acc[j], fr[k][j], db + 2 * k, 1);
          }
          wgmma_commit();
          wgmma_wait<0>();
          if (lane == 0) {
            mbar_arrive(wempty + ws);
            if (ih == d.nth - 1 && iw == d.ntw - 1) mbar_arrive(hempty + hs);
          }
        }
      }
    }
#pragma unroll
    for (int j = 0; j < MSUB; ++j) fence_regs(acc[j]);

    // Accumulator layout: register 4c + {0,1,2,3} of slice j is (row g4, col
    // 8c + 2 t4), (.., +1), (row g4 + 8, ..), (.., +1), rows 16 wq.. of the slice.
#pragma unroll
    for (int j = 0; j < MSUB; ++j) {
      const int qh = d.qh0 + wgi * MSUB + j;
      if (qh >= d.Mh) continue;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int qw = d.qw0 + wq * 16 + half * 8 + g4;
        if (qw >= d.Mw) continue;
        const int64_t oh = d.rh + int64_t(qh) * p.sh, ow = d.rw + int64_t(qw) * p.sw;
        float* yp = y + ((int64_t(d.n) * p.Cout + int64_t(d.g) * p.Cout_g) * p.Hout + oh) * p.Wout + ow;
#pragma unroll
        for (int cc = 0; cc < BN / 8; ++cc) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int co = d.co_tile * BN + cc * 8 + 2 * t4 + e;
            if (co < p.Cout_g) {
              const float bv = bias != nullptr ? bias[int64_t(d.g) * p.Cout_g + co] : 0.f;
              yp[co * plane] = acc[j][cc * 4 + half * 2 + e] + bv;
            }
          }
        }
      }
    }
  }
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
}

// Halo rows and columns the block's taps reach; phases with fewer taps read a
// part of the same box.
struct Reach {
  int64_t rows, cols;
};
Reach halo_reach(const ConvTParams& p, int rows) {
  const PhaseTaps th = phase_taps(0, p.ph, p.sh, p.dh, p.KH), tw = phase_taps(0, p.pw, p.sw, p.dw, p.KW);
  // Every phase has at most ceil(K / step) taps, and step is the same for all.
  const int64_t nth = (p.KH + th.step - 1) / th.step, ntw = (p.KW + tw.step - 1) / tw.step;
  // + 3 columns: the box starts on a 16-byte-aligned column (the kernel's x0a).
  return {rows + (nth - 1) * (th.step * p.dh / p.sh), kCols + 3 + (ntw - 1) * (tw.step * p.dw / p.sw)};
}

// The smallest halo of at least `reach` whose plane pitch is 8 or 24 mod 32
// words: the 4 k-planes x 8 pixels a warp's load touches then fall in 32
// distinct banks. Columns are a multiple of 4 (TMA rows are 16-byte multiples);
// a row count that is a multiple of 4 admits no such pitch, so it may grow by one.
bool halo_shape(Reach reach, int* hr, int* hc) {
  int64_t best = -1;
  for (int64_t r = reach.rows; r <= reach.rows + 1; ++r) {
    for (int64_t c = (reach.cols + 3) / 4 * 4; c <= reach.cols + 35; c += 4) {
      const int64_t pitch = r * c;
      if ((pitch % 32 == 8 || pitch % 32 == 24) && (best < 0 || pitch < best)) {
        best = pitch;
        *hr = static_cast<int>(r);
        *hc = static_cast<int>(c);
      }
    }
  }
  return best > 0 && *hr <= 256 && *hc <= 256;
}

template <int BN, int MSUB, int NH, int NW>
bool shape_fits(const ConvTParams& p, WghGrid* gg) {
  using S = WghShape<BN, MSUB, NH, NW>;
  int hr = 0, hc = 0;
  // A TMA box larger than its tensor faults at the load (illegal instruction)
  // although the map encodes: the halo must fit the image, the chunk the group.
  if (!halo_shape(halo_reach(p, S::kRows), &hr, &hc) || hr > p.Hin || hc > p.Win || p.Cin_g < kChunk) return false;
  gg->hr = hr;
  gg->hc = hc;
  gg->plane = hr * hc;
  gg->halo_bytes = kChunk * gg->plane * 4;
  gg->halo_slot = (gg->halo_bytes + 1023) / 1024 * 1024;
  for (gg->nh = NH; gg->nh > 1 && S::smem_bytes(gg->halo_slot, gg->nh) > kMaxSmem; --gg->nh) {
  }
  return S::smem_bytes(gg->halo_slot, gg->nh) <= kMaxSmem;
}

template <int BN, int MSUB, int NH, int NW>
void launch_shape(const ConvTParams& p, const float* x, const float* w, const float* b, float* y, cudaStream_t stream,
                  const at::TensorOptions& opts) {
  using S = WghShape<BN, MSUB, NH, NW>;
  WghGrid gg;
  const bool fits = shape_fits<BN, MSUB, NH, NW>(p, &gg);
  TORCH_CHECK(fits, "convt: the halo kernel's tile does not fit this problem");
  gg.chunks = static_cast<int>((p.Cin_g + kChunk - 1) / kChunk);
  gg.co_tiles = static_cast<int>((p.Cout_g + BN - 1) / BN);
  gg.co_pad = gg.co_tiles * BN;
  gg.phases_h = static_cast<int>(std::min(p.sh, p.Hout));
  gg.phases_w = static_cast<int>(std::min(p.sw, p.Wout));
  const int64_t Mh = phase_extent(0, p.sh, p.Hout), Mw = phase_extent(0, p.sw, p.Wout);
  gg.w_tiles = static_cast<int>((Mw + kCols - 1) / kCols);
  gg.h_tiles = static_cast<int>((Mh + S::kRows - 1) / S::kRows);
  gg.total = p.groups * p.N * int64_t(gg.h_tiles) * gg.w_tiles * gg.co_tiles * gg.phases_h * gg.phases_w;
  TORCH_CHECK(gg.total < (int64_t(1) << 31), "convt: too many output tiles for one launch");

  // Weights as the other tensor-core paths pack them (TF32-rounded k-words,
  // [g][kh][kw][co_pad][word]), read by a swizzled 2-d map.
  TcGrid tg;
  tg.words = gg.chunks * kChunk;
  tg.co_pad = gg.co_pad;
  tg.px_words = 0;
  const int64_t rows = p.groups * p.KH * p.KW * gg.co_pad, packed = rows * tg.words;
  at::Tensor wp = at::empty({packed}, opts.dtype(at::kInt));
  uint32_t* wpp = reinterpret_cast<uint32_t*>(wp.mutable_data_ptr<int>());
  pack_weights_kernel<float, true>
      <<<static_cast<int>(std::min<int64_t>((packed + 255) / 256, 4096)), 256, 0, stream>>>(p, tg, w, wpp);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const cuuint64_t wdims[2] = {cuuint64_t(tg.words), cuuint64_t(rows)};
  const cuuint64_t wstrides[1] = {cuuint64_t(tg.words) * 4};
  const cuuint32_t wbox[2] = {cuuint32_t(kChunk), cuuint32_t(BN)};
  const CUtensorMap wmap =
      encode_tiled_map(CU_TENSOR_MAP_DATA_TYPE_UINT32, 2, wpp, wdims, wstrides, wbox, CU_TENSOR_MAP_SWIZZLE_128B);

  const CUtensorMap xmap =
      input_map(p, x, cuuint32_t(gg.hc), cuuint32_t(gg.hr), cuuint32_t(kChunk), /*keep_group=*/true);

  const int smem = S::smem_bytes(gg.halo_slot, gg.nh);
  auto kernel = convt_wgh_kernel<BN, MSUB, NH, NW>;
  allow_dynamic_smem(kernel, smem);
  int device = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  const int sms = sm_count(device), per_sm = blocks_per_sm(kernel, kThreads, smem, device);
  const int64_t grid = std::min<int64_t>(gg.total, int64_t(sms) * std::max(per_sm, 1));
  kernel<<<static_cast<unsigned>(grid), kThreads, smem, stream>>>(xmap, wmap, p, gg, b, y);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

WghTile auto_tile(const ConvTParams& p) {
  return p.Cout_g <= 32 ? WghTile::kBN32 : p.Cout_g <= 64 ? WghTile::kBN64 : WghTile::kBN128;
}

template <int BN_, int MSUB_, int NH_, int NW_>
struct Tile {
  static constexpr int BN = BN_, MSUB = MSUB_, NH = NH_, NW = NW_;
};

// Each tile's shape, in one place for the launch and the support check.
template <typename F>
auto with_shape(WghTile tile, F&& f) {
  switch (tile) {
    case WghTile::kBN32: return f(Tile<32, 2, 2, 4>{});
    case WghTile::kBN64Small: return f(Tile<64, 1, 1, 4>{});
    case WghTile::kBN128: return f(Tile<128, 1, 2, 4>{});
    default: return f(Tile<64, 2, 2, 4>{});
  }
}

}  // namespace

bool wgh_supports(const ConvTParams& p, const at::Tensor& x, WghTile tile) {
  // TMA: 16-byte-aligned base and row strides; 32-bit coordinates.
  if (x.scalar_type() != at::kFloat || p.Win % 4 != 0 || reinterpret_cast<uintptr_t>(x.const_data_ptr()) % 16 != 0) {
    return false;
  }
  const int64_t lim = (int64_t(1) << 31) - 1;
  if (p.Hin + p.KH * p.dh >= lim || p.Win + p.KW * p.dw >= lim || p.N >= lim ||
      p.groups * p.KH * p.KW * (p.Cout_g + 128) >= lim || p.Cin_g + kChunk >= lim) {
    return false;
  }
  WghGrid gg;
  return with_shape(tile == WghTile::kAuto ? auto_tile(p) : tile, [&](auto t) {
    using T = decltype(t);
    return shape_fits<T::BN, T::MSUB, T::NH, T::NW>(p, &gg);
  });
}

void launch_wgh(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                WghTile tile, cudaStream_t stream) {
  TORCH_CHECK(x.scalar_type() == at::kFloat, "convt: the halo path takes float32 (as TF32)");
  const float* xp = x.const_data_ptr<float>();
  const float* wp = w.const_data_ptr<float>();
  const float* bp = b.defined() ? b.const_data_ptr<float>() : nullptr;
  float* yp = out.mutable_data_ptr<float>();
  const auto o = x.options();
  with_shape(tile == WghTile::kAuto ? auto_tile(p) : tile, [&](auto t) {
    using T = decltype(t);
    launch_shape<T::BN, T::MSUB, T::NH, T::NW>(p, xp, wp, bp, yp, stream, o);
  });
}

}  // namespace convt
