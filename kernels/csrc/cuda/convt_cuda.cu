// CUDA kernel, gather form organised by output phase. A block owns one group,
// one tile of CO_T output channels and THREADS*PX outputs of one phase (outputs
// congruent mod stride, across the batch), so its tap list is fixed: the divisibility test
// runs once per block, and no thread visits a tap that cannot contribute. Phases
// with no taps are a pure bias/zero fill. Each thread keeps CO_T x PX accumulators
// in registers; the weights of a chunk of input channels for the current tap are
// staged in shared memory and read as warp-wide broadcasts.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../convt_params.h"
#include "convt_cells.h"
#include "convt_taps.h"
#include "convt_cols.h"
#include "convt_dense.h"
#include "convt_dwg.h"
#include "convt_dwin.h"
#include "convt_patch.h"
#include "convt_rows.h"
#include "convt_stack.h"
#include "convt_strip.h"
#include "convt_tc.h"
#include "smem_attr.h"

namespace convt {
namespace {

constexpr int kThreads = 128;
constexpr int kCiChunk = 32;

struct TileGrid {
  int64_t co_tiles, phases_h, phases_w, pix_tiles, total;
};

template <typename scalar_t, typename acc_t, int CO_T, int PX>
__global__ void __launch_bounds__(kThreads)
    convt_phase_kernel(const ConvTParams p, const TileGrid tg, const scalar_t* __restrict__ x,
                       const scalar_t* __restrict__ w, const scalar_t* __restrict__ bias,
                       scalar_t* __restrict__ y) {
  __shared__ acc_t w_s[kCiChunk][CO_T];
  const int tid = threadIdx.x;
  const int64_t KK = p.KH * p.KW, HWin = p.Hin * p.Win;

  for (int64_t blk = blockIdx.x; blk < tg.total; blk += gridDim.x) {
    // Phases vary fastest: the sh*sw blocks that interleave into one output
    // region run together, so their strided partial-sector stores merge in L2
    // instead of each phase evicting half-written sectors (kb81: 3.3 ms at 60% of
    // DRAM bandwidth, moving 8x the output's bytes, with phases outermost).
    int64_t rest = blk;
    const int64_t rw = rest % tg.phases_w; rest /= tg.phases_w;
    const int64_t rh = rest % tg.phases_h; rest /= tg.phases_h;
    const int64_t pix_tile = rest % tg.pix_tiles; rest /= tg.pix_tiles;
    const int64_t co_tile = rest % tg.co_tiles;
    const int64_t g = rest / tg.co_tiles;

    const int64_t Mh = phase_extent(rh, p.sh, p.Hout), Mw = phase_extent(rw, p.sw, p.Wout);
    const PhaseTaps th = phase_taps(rh, p.ph, p.sh, p.dh, p.KH);
    const PhaseTaps tw = phase_taps(rw, p.pw, p.sw, p.dw, p.KW);
    const int64_t co0 = co_tile * CO_T;

    // The batch is folded into the pixel dimension, so a small image at a large
    // batch still fills whole blocks.
    int64_t nb[PX], mh[PX], mw[PX];
    bool live[PX];
#pragma unroll
    for (int j = 0; j < PX; ++j) {
      const int64_t pix = (pix_tile * PX + j) * kThreads + tid;
      live[j] = pix < p.N * Mh * Mw;
      const int64_t q = live[j] ? pix : 0;
      nb[j] = q / (Mh * Mw);
      mh[j] = (q % (Mh * Mw)) / Mw;
      mw[j] = q % Mw;
    }

    acc_t acc[CO_T][PX];
#pragma unroll
    for (int c = 0; c < CO_T; ++c)
#pragma unroll
      for (int j = 0; j < PX; ++j) acc[c][j] = acc_t(0);

    const scalar_t* x_g = x + g * p.Cin_g * HWin;
    const scalar_t* w_g = w + (g * p.Cin_g * p.Cout_g + co0) * KK;
    for (int64_t kh = th.k0; kh < p.KH; kh += th.step) {
      const int64_t bh = tap_offset(rh, p.ph, p.sh, p.dh, kh);
      for (int64_t kw = tw.k0; kw < p.KW; kw += tw.step) {
        const int64_t bw = tap_offset(rw, p.pw, p.sw, p.dw, kw);
        int64_t off[PX];
        bool ok[PX];
#pragma unroll
        for (int j = 0; j < PX; ++j) {
          const int64_t ih = mh[j] + bh, iw = mw[j] + bw;
          ok[j] = live[j] && ih >= 0 && ih < p.Hin && iw >= 0 && iw < p.Win;
          off[j] = ok[j] ? nb[j] * p.Cin * HWin + ih * p.Win + iw : 0;
        }
        const scalar_t* w_tap = w_g + kh * p.KW + kw;
        for (int64_t ci0 = 0; ci0 < p.Cin_g; ci0 += kCiChunk) {
          const int chunk = static_cast<int>(p.Cin_g - ci0 < kCiChunk ? p.Cin_g - ci0 : kCiChunk);
          __syncthreads();
          for (int e = tid; e < kCiChunk * CO_T; e += kThreads) {
            const int ci = e / CO_T, c = e % CO_T;
            w_s[ci][c] = (ci < chunk && co0 + c < p.Cout_g)
                             ? static_cast<acc_t>(w_tap[((ci0 + ci) * p.Cout_g + c) * KK])
                             : acc_t(0);
          }
          __syncthreads();
          const scalar_t* x_c = x_g + ci0 * HWin;
          for (int ci = 0; ci < chunk; ++ci, x_c += HWin) {
            acc_t xv[PX];
#pragma unroll
            for (int j = 0; j < PX; ++j) xv[j] = ok[j] ? static_cast<acc_t>(x_c[off[j]]) : acc_t(0);
#pragma unroll
            for (int c = 0; c < CO_T; ++c) {
              const acc_t wv = w_s[ci][c];
#pragma unroll
              for (int j = 0; j < PX; ++j) acc[c][j] += wv * xv[j];
            }
          }
        }
      }
    }

#pragma unroll
    for (int c = 0; c < CO_T; ++c) {
      const int64_t co = co0 + c;
      if (co < p.Cout_g) {
        const int64_t oc = g * p.Cout_g + co;
        const acc_t bv = bias != nullptr ? static_cast<acc_t>(bias[oc]) : acc_t(0);
#pragma unroll
        for (int j = 0; j < PX; ++j) {
          if (live[j]) {
            y[((nb[j] * p.Cout + oc) * p.Hout + rh + mh[j] * p.sh) * p.Wout + rw + mw[j] * p.sw] =
                static_cast<scalar_t>(acc[c][j] + bv);
          }
        }
      }
    }
  }
}

template <typename scalar_t, int CO_T, int PX>
void launch(const ConvTParams& p, const scalar_t* x, const scalar_t* w, const scalar_t* b, scalar_t* y,
            cudaStream_t stream) {
  using acc_t = at::opmath_type<scalar_t>;
  TileGrid tg;
  tg.co_tiles = (p.Cout_g + CO_T - 1) / CO_T;
  tg.phases_h = std::min(p.sh, p.Hout);
  tg.phases_w = std::min(p.sw, p.Wout);
  const int64_t phase_pixels = p.N * max_phase_pixels(p);
  tg.pix_tiles = (phase_pixels + kThreads * PX - 1) / (kThreads * PX);
  tg.total = p.groups * tg.co_tiles * tg.phases_h * tg.phases_w * tg.pix_tiles;
  const int64_t grid = std::min<int64_t>(tg.total, int64_t(1) << 30);
  convt_phase_kernel<scalar_t, acc_t, CO_T, PX><<<static_cast<unsigned>(grid), kThreads, 0, stream>>>(p, tg, x, w, b, y);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename scalar_t, int CO_T>
void launch_px(const ConvTParams& p, const scalar_t* x, const scalar_t* w, const scalar_t* b, scalar_t* y,
               cudaStream_t stream) {
  // Several outputs a thread reuse each staged weight; phases too small to fill
  // blocks that way take one output a thread instead. 32 channels a thread halve
  // the input re-reads of 16, at two outputs a thread to stay within registers.
  constexpr int kPx = CO_T >= 32 ? 2 : 4;
  if (p.N * max_phase_pixels(p) >= kThreads * kPx * 16) {
    launch<scalar_t, CO_T, kPx>(p, x, w, b, y, stream);
  } else {
    launch<scalar_t, CO_T, 1>(p, x, w, b, y, stream);
  }
}

void launch_ffma(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 cudaStream_t stream) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "convt_cuda", [&] {
    const scalar_t* xp = x.const_data_ptr<scalar_t>();
    const scalar_t* wp = w.const_data_ptr<scalar_t>();
    const scalar_t* bp = b.defined() ? b.const_data_ptr<scalar_t>() : nullptr;
    scalar_t* yp = out.mutable_data_ptr<scalar_t>();
    if (p.Cout_g == 1) {
      launch_px<scalar_t, 1>(p, xp, wp, bp, yp, stream);
    } else if (p.Cout_g <= 4) {
      launch_px<scalar_t, 4>(p, xp, wp, bp, yp, stream);
    } else if (p.Cout_g <= 8) {
      launch_px<scalar_t, 8>(p, xp, wp, bp, yp, stream);
    } else if (p.Cout_g <= 16 || p.sh * p.sw > 1) {
      // 32-channel tiles paid on stride-1 problems (kb57: 56 -> 37 ms) but cost
      // strided ones half their speed (kb81: 1.8 -> 3.7 ms), whose sparse phases
      // then leave too few blocks to fill the GPU.
      launch_px<scalar_t, 16>(p, xp, wp, bp, yp, stream);
    } else {
      launch_px<scalar_t, 32>(p, xp, wp, bp, yp, stream);
    }
  });
}

// CONVT_CUDA_ALGO forces a path (tests and benchmarks reach every one this way):
// ffma; rows, rows4, rows8, rows4k2, rows8k2, rows8k4, rows8k8 (the FFMA path for 1-4 output channels a
// group: outputs a thread, k: warps splitting the input channels); patch, patchk1, patchk2, patchk4 (the FFMA
// path for 1-4 output channels a group that stages input for every phase of a block; k: the split); cells,
// cellsk1, cellsk2 (a strided layer's cells, sh x sw outputs x its few output channels, as the columns of one
// implicit GEMM; k: mma k-steps a chunk of input channels); taps (a strided layer's products a pixel, Cout/g x KH x
// KW, as one GEMM's columns into shared memory, each output summing its taps' products from there); stack (sm_90a: a
// cell row's products a pixel, Cout/g x sh x sw x width offsets, as one wgmma GEMM's columns over the input channels
// of every input row the cell row reads, each output summing its width taps' products);
// cols, colsk1, colsk2, colsw, colsc1, colsc2, colsc4 (one GEMM a group against every (output channel, kernel row,
// kernel column), written as a pixel shuffle where kernel == stride or summed in shared memory over whole images of
// at most 256 pixels or tiles of larger ones; k: 64-byte k-slices a stage; w: the shuffle on wgmma, convt_colsw.cu,
// which "cols" also takes where it applies; c: the gather's output channels a block); dense, dense2, dense2w, dense4, dense4w (stride 1: one implicit GEMM over input channels x
// taps from an NCHW halo in shared memory; 2 or 4: 32 or 64 output channels a warp; w: 16 warps a block, else 8);
// dwg, dwg1, dwg2, dwg2s, dwg4, dwg23 (the dense kernel's GEMM on wgmma, sm_90a, fp32 as TF32: output channels
// as M from registers, output columns as N from a pixel-major halo by descriptor; 1, 2 or 4 output rows a warpgroup
// x 128 columns (4: 64; 2s: 64, two blocks an SM), two warpgroups a block; 23: 2 rows, three warpgroups; 14 and
// 24: four warpgroups of 1 row x 128 columns or 2 x 64); dws, dws4, dws23, dws13 (the same GEMM warp-specialized
// and persistent, v18: a producer warpgroup and 2 consumer warpgroups of 2 rows x 128 columns or 4 x 64, or 3 of
// 2 x 64 or 1 x 128); dwp4 (its ping-pong form); dws3, dwp3 (2 consumer warpgroups of 3 rows x 88 columns, and
// its ping-pong form: 88 pads the output widths 518 and 260 2% where 64 pads them 11% and 23%); dwn8, dwnp8 (v24:
// the same with channels as N, 32 a tile, and pixels as M, 8 rows x 64 columns a consumer warpgroup; p: in
// ping-pong); dws4w, dwp4w (dws3 and dwp3 at 4 rows x 88 columns: the consumers take registers from the
// producer); dwr4 (dwp4 with each tap's weights as wgmma's A from registers); dwin (v27, the window kernel: 3
// kernel rows at 32 output channels or fewer, the rows side by side in wgmma's N and output rows rolling down a
// 64-column strip; falls back to dwg's pick);
// strip, strip4, strip16, strip32 (the path that writes whole output rows, its channel tile; products on tensor
// cores in TF32 and half types, else FFMA), stripf (the same on FFMA in every precision); tc (tile by heuristic), tc32, tc64, tc128; wg (tile by heuristic), wg32,
// wg64, wg64t, wg128, wg128t; wgh (tile by heuristic), wgh32, wgh64, wgh64s,
// wgh128; unset or auto: the heuristic. A forced tensor-core path the problem or
// device cannot take falls back to the next one down (wgh -> wg -> tc -> ffma),
// as strict fp32 does from wg (wgmma has no 3xTF32 here); dwg falls back to dense; rows, patch, cells, taps, cols, dense
// and strip fall back to ffma.
enum class Path { kFfma, kRows, kPatch, kCells, kTaps, kStack, kCols, kDense, kDwg, kDwin, kStrip, kTc, kWg, kWgh };
struct Algo {
  Path path;
  TcTile tc_tile = TcTile::kAuto;
  WgTile wg_tile = WgTile::kAuto;
  WghTile wgh_tile = WghTile::kAuto;
  RowsTile rows;  // the rows kernel's tile; 0s: its pick
  int strip = 0;  // output channels a block on the strip kernel; 0: its pick
  int patch = 0;  // warps splitting the patch kernel's input channels; 0: its pick
  int cols = 0;  // the columns kernel's k a stage, in 64-byte slices; 0: its pick; 3: its shuffle on wgmma
  DenseTile dense;  // the dense kernel's m-tiles a warp and warps a block; 0s: its pick
  DwgTile dwg;      // the wgmma dense kernel's rows a warpgroup, warpgroups a block and columns; 0s: its pick
  int cols_channels = 0;  // the columns kernel's gather: output channels a block; 0: its pick
  int cells = 0;          // the cells kernel's k-steps a chunk; 0: its pick
  bool strip_ffma = false;  // the strip kernel's products on FFMA even where tensor cores are allowed
};

struct Forced {
  const char* name;
  Algo algo;
};
constexpr Forced kForced[] = {
    {"ffma", {Path::kFfma}},
    {"rows", {Path::kRows}},
    {"rows4", {Path::kRows, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {4, 1}}},
    {"rows8", {Path::kRows, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {8, 1}}},
    {"rows4k2", {Path::kRows, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {4, 2}}},
    {"rows8k2", {Path::kRows, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {8, 2}}},
    {"rows8k4", {Path::kRows, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {8, 4}}},
    {"rows8k8", {Path::kRows, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {8, 8}}},
    {"patch", {Path::kPatch}},
    {"patchk1", {Path::kPatch, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 1}},
    {"patchk2", {Path::kPatch, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 2}},
    {"patchk4", {Path::kPatch, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 4}},
    {"cells", {Path::kCells}},
    {"cellsk1", {Path::kCells, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {}, 0, 1}},
    {"cellsk2", {Path::kCells, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {}, 0, 2}},
    {"taps", {Path::kTaps}},
    {"stack", {Path::kStack}},
    {"cols", {Path::kCols}},
    {"colsk1", {Path::kCols, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 1}},
    {"colsk2", {Path::kCols, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 2}},
    {"colsw", {Path::kCols, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 3}},
    {"colsc1", {Path::kCols, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {}, 1}},
    {"colsc2", {Path::kCols, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {}, 2}},
    {"colsc4", {Path::kCols, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {}, 4}},
    {"dense", {Path::kDense}},
    {"dense2", {Path::kDense, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {2, 8}}},
    {"dense2w", {Path::kDense, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {2, 16}}},
    {"dense4", {Path::kDense, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {4, 8}}},
    {"dense4w", {Path::kDense, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {4, 16}}},
    {"dwg", {Path::kDwg}},
    {"dwg1", {Path::kDwg, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {1, 2}}},
    {"dwg2", {Path::kDwg, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {2, 2}}},
    {"dwg2s", {Path::kDwg, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {2, 2, 64}}},
    {"dwg4", {Path::kDwg, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {4, 2}}},
    {"dwg23", {Path::kDwg, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {2, 3}}},
    {"dwg14", {Path::kDwg, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {1, 4}}},
    {"dwg24", {Path::kDwg, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {2, 4}}},
    {"dws", {Path::kDwg, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {2, 2, 128, true}}},
    {"dws4", {Path::kDwg, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {4, 2, 64, true}}},
    {"dws23", {Path::kDwg, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {2, 3, 64, true}}},
    {"dws13", {Path::kDwg, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {1, 3, 128, true}}},
    {"dwp4", {Path::kDwg, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {4, 2, 64, true, true}}},
    {"dws3", {Path::kDwg, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {3, 2, 88, true}}},
    {"dwp3", {Path::kDwg, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {3, 2, 88, true, true}}},
    {"dws4w", {Path::kDwg, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {4, 2, 88, true}}},
    {"dwp4w", {Path::kDwg, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {4, 2, 88, true, true}}},
    {"dwr4",
     {Path::kDwg, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {4, 2, 64, true, true, 0, true}}},
    {"dwn8", {Path::kDwg, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {8, 2, 64, true, false, 32}}},
    {"dwnp8", {Path::kDwg, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {8, 2, 64, true, true, 32}}},
    {"dwin", {Path::kDwin}},
    {"strip", {Path::kStrip}},
    {"strip4", {Path::kStrip, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 4}},
    {"strip16", {Path::kStrip, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 16}},
    {"strip32", {Path::kStrip, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 32}},
    {"stripf", {Path::kStrip, TcTile::kAuto, WgTile::kAuto, WghTile::kAuto, {}, 0, 0, 0, {}, {}, 0, 0, true}},
    {"tc", {Path::kTc}},
    {"tc32", {Path::kTc, TcTile::kBN32}},
    {"tc64", {Path::kTc, TcTile::kBN64}},
    {"tc128", {Path::kTc, TcTile::kBN128}},
    {"wg", {Path::kWg}},
    {"wg32", {Path::kWg, TcTile::kAuto, WgTile::kBN32}},
    {"wg64", {Path::kWg, TcTile::kAuto, WgTile::kBN64}},
    {"wg64t", {Path::kWg, TcTile::kAuto, WgTile::kBN64Tall}},
    {"wg128", {Path::kWg, TcTile::kAuto, WgTile::kBN128}},
    {"wg128t", {Path::kWg, TcTile::kAuto, WgTile::kBN128Tall}},
    {"wgh", {Path::kWgh}},
    {"wgh32", {Path::kWgh, TcTile::kAuto, WgTile::kAuto, WghTile::kBN32}},
    {"wgh64", {Path::kWgh, TcTile::kAuto, WgTile::kAuto, WghTile::kBN64}},
    {"wgh64s", {Path::kWgh, TcTile::kAuto, WgTile::kAuto, WghTile::kBN64Small}},
    {"wgh128", {Path::kWgh, TcTile::kAuto, WgTile::kAuto, WghTile::kBN128}},
};

// The dense kernel's tile where the heuristic takes it (above), or {} where it does not: a full chunk of input
// channels, at least a tile of output channels, and outputs to fill a few rectangles.
DenseTile dense_preferred(const ConvTParams& p, at::ScalarType dtype, bool tf32) {
  if (p.sh != 1 || p.sw != 1 || p.Cin_g < 16 || p.Cout_g < 16 || p.Hout * p.Wout < 1024) return {};
  const bool tf32_mode = dtype == at::kFloat && tf32;
  // 16 warps measured faster but for TF32 on a 3x3 kernel (kb71 0.87 against 0.95 ms): their taller halo cuts the
  // weights a block stages per output, which matters where there are more taps or three products a tap.
  if (p.Cout_g <= 32) return {2, tf32_mode && p.KH * p.KW <= 9 ? 8 : 16};
  // TF32 at 33-64 output channels: a tie with the halo kernel on a 3x3 kernel (kb57), about 3% ahead of it with more
  // taps (kb65 2.28-2.37 ms against 2.35-2.44 in runs 1, 2 and 5 of docs/benchmarks/variants-v15-dense.txt).
  if (tf32_mode) return p.Cout_g <= 64 && p.KH * p.KW > 9 ? DenseTile{4, 16} : DenseTile{};
  if (dtype == at::kDouble) return {};
  if (p.Cout_g <= 64 || dtype == at::kFloat) return {4, 16};
  return {};
}

Algo choose_algo(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, bool tf32) {
  const at::ScalarType dtype = x.scalar_type();
  const char* env = std::getenv("CONVT_CUDA_ALGO");
  const bool tc_ok = tc_supports(p, dtype);
  const bool wg_ok = tc_ok && (dtype != at::kFloat || tf32) && wg_supports(p, dtype) && wg_available(x.get_device());
  const bool forced = env != nullptr && *env != '\0' && std::strcmp(env, "auto") != 0;
  if (forced) {
    for (const Forced& f : kForced) {
      if (std::strcmp(env, f.name) != 0) continue;
      Algo a = f.algo;
      if (a.path == Path::kWgh && !(wg_ok && dtype == at::kFloat && wgh_supports(p, x, a.wgh_tile))) a.path = Path::kWg;
      if (a.path == Path::kWg && !wg_ok) a.path = Path::kTc;
      if (a.path == Path::kTc && !tc_ok) a.path = Path::kFfma;
      if (a.path == Path::kRows && !rows_supports(p)) a.path = Path::kFfma;
      if (a.path == Path::kPatch && !patch_supports(p)) a.path = Path::kFfma;
      if (a.path == Path::kStrip && !strip_supports(p, dtype, a.strip)) a.path = Path::kFfma;
      if (a.path == Path::kCols && !cols_supports(p, x, w)) a.path = Path::kFfma;
      if (a.path == Path::kCells && !cells_supports(p, x)) a.path = Path::kFfma;
      if (a.path == Path::kTaps && !taps_supports(p, x, tf32)) a.path = Path::kFfma;
      if (a.path == Path::kStack && !stack_supports(p, x, tf32)) a.path = Path::kFfma;
      if (a.path == Path::kDwin && !dwin_supports(p, x, tf32)) a.path = Path::kDwg;
      if (a.path == Path::kDwg && !dwg_supports(p, x, tf32, a.dwg)) a.path = Path::kDense;
      if (a.path == Path::kDense && !dense_supports(p, x, tf32, a.dense)) a.path = Path::kFfma;
      return a;
    }
    CONVT_CHECK(false, "CONVT_CUDA_ALGO must be auto, ffma, rows, rows4, rows8, rows4k2, rows8k2, rows8k4, rows8k8, patch, patchk1, patchk2, patchk4, cells, cellsk1, cellsk2, taps, stack, cols, colsk1, colsk2, colsw, colsc1, colsc2, colsc4, dense, dense2, dense2w, dense4, dense4w, dwg, dwg1, dwg2, dwg2s, dwg4, dwg23, dwg14, dwg24, dws, dws4, dws23, dws13, dwp4, dws3, dwp3, dws4w, dwp4w, dwr4, dwn8, dwnp8, dwin, strip, strip4, strip16, strip32, stripf, tc, tc32, tc64, tc128, wg, wg32, wg64, wg64t, wg128, "
                "wg128t, wgh, wgh32, wgh64, wgh64s or wgh128, not '", env, "'");
  }
  // Tensor cores need channels on both sides of the GEMM to beat FFMA. fp32 with a
  // short K per phase (kb81: 32 channels x 1 tap) is a store-bound problem where
  // the FFMA kernel's direct NCHW reads beat the channels-last copy.
  const int64_t taps_h = (p.KH + p.sh - 1) / p.sh, taps_w = (p.KW + p.sw - 1) / p.sw;
  const bool short_k = dtype == at::kFloat && p.Cin_g * std::max<int64_t>(1, taps_h * taps_w) <= 32;
  // 1-4 output channels a group leave a channel tile nothing to reuse: the rows kernel (now where the patch
  // kernel below does not apply) reuses input rows across height taps instead, its input channels split
  // over warps where the grid is short (fsrcnn-56-1-n1 0.14 vs FFMA 0.27 ms,
  // dcgan-64-3-n64 0.08 vs 0.12, depthwise-256-n16 0.55 vs 2.17:
  // docs/benchmarks/variants-v12-rows-split.txt).
  // fp16/bf16 with a full k-chunk of input channels: wgmma's 32-wide tile, mostly padding at 1-4 output
  // channels, still beat the rows kernel (dcgan-64-3-n64 0.073 vs 0.093 ms, fsrcnn-56-1-n1 a tie:
  // docs/benchmarks/variants-v12-rows-split.txt); in fp32 it loses (0.091 vs 0.077).
  // The patch kernel (the rows kernel's scheme with every phase of a block fed from one shared-memory copy
  // of its input) beats both where it applies (ba4010a, H100): fp32 fsrcnn-56-1-n1 0.060-0.076 ms against
  // rows 0.160 and cuDNN 0.087-0.095, dcgan-64-3-n64 0.053-0.061 against 0.082 and 0.069-0.077,
  // depthwise-256-n16 0.195-0.201 against 1.11 and 1.56; fp16 fsrcnn 0.087 against wgmma's 0.177, dcgan-64-3
  // 0.083-0.086 against 0.093 (docs/benchmarks/variants-v13-patch.txt). fp16/bf16 from 128 input channels a
  // group is left to wgmma, whose tensor cores gain with the reduction (not measured: no such layer in the
  // suite).
  // Before it, the columns kernel's tiled gather (tiles of larger images, each recomputing its halo) where a group has
  // 1-4 output channels whose weight rows copy in 16-byte pieces, in TF32 and half types. GPU time alone on an H200
  // (bench.gpu_time, session 26): dcgan-64-3-n64 28.0 us against the patch kernel's 33.2 in TF32, 21.7 against
  // 52.0 in fp16, 22.9 against 45.8 in bf16 (cuDNN 54-61); strict fp32 a tie (33.7 against 33.4), which the patch
  // kernel keeps. FSRCNN's 81 columns (copied an element at a time, a tile's own pixels 47% of it) lose: 48 against
  // 41.5 us in TF32, 61 against 52 in fp16.
  // Before both, the cells kernel (a strided layer's cells, sh x sw outputs x its 1-4 output channels, as the columns
  // of one implicit GEMM on tensor cores, every output written once) in TF32 and half types, where an image has cells
  // to fill its 8 x 32-cell blocks. GPU time alone on an H200 (bench.gpu_time, session 27, us, against the path taken
  // before): fsrcnn-56-1-n1 27.8 against the patch kernel's 41.5 in TF32, 20.2 against 52.4 in fp16 and bf16;
  // dcgan-64-3-n64 25.0 against the tiled gather's 26.9 in TF32, 18.4 against 21.5 in fp16 (cuDNN 54-61, 495 for
  // FSRCNN in half types). Strict fp32 (3xTF32 on a GEMM a third of whose products are padding) loses there, 61
  // against 42 and 45 against 34, and stays on the patch kernel.
  // Where the taps kernel (v32) takes such a layer, it goes there instead. GPU time alone on an H100 (bench.gpu_time,
  // session 38, us, taps against cells, in TF32 / fp16 / bf16; docs/benchmarks/gpu-time-s38.md): fsrcnn-56-1-n1
  // 23.8/17.9/17.7 against 25.1/18.9/19.2, dcgan-64-3-n64 21.2/16.7/16.9 against 23.9/17.5/17.5; and on the probe
  // shapes there, DCGAN 64->3 at batch 1 7.8/6.9/6.9 against 15.0/11.5/11.6 (cuDNN 12.5 in TF32), grouped 6x6 stride
  // 2 12.3/9.4/9.5 against 15.8/11.1/11.0, FSRCNN at batch 4 and 4x3 at strides (2, 1) 6-10% ahead; it trails by
  // 1-3% only where a pixel has 64 products (4 of its 6 m-tiles real: 32->4 4x4 stride 2 in half types, 24->1 8x8
  // stride 4). Since six m-tiles store paired columns (session 39: FSRCNN TF32 22.2 us against 23.8), the 64-product
  // probes trail by 2-8% (24->1 8x8 stride 4 11.2/9.5/9.7 against cells' 10.4/9.0/9.1, 32->4 4x4 stride 2
  // 14.3/11.9/12.0 against 14.0/11.6/11.6; docs/benchmarks/gpu-time-s39.md), so 49-64 products go to cells.
  // On sm_90a, where an output's taps read three input rows, the stack kernel (v41, v42: the three rows stacked in one
  // wgmma reduction) takes them. GPU time alone on an H100 (bench.gpu_time, session 41, us, stack against taps,
  // TF32 / fp16 / bf16; docs/benchmarks/gpu-time-s41.md): fsrcnn-56-1-n1 17.2/15.0/14.5 against 21.9/17.8/17.5,
  // FSRCNN at batch 4 18.6/16.0/15.8 against 25.1/19.8/19.7, grouped 6x6 stride 2 9.4/9.4/9.3 against 12.0/9.5/9.5.
  // Two rows stay on taps, which keeps DCGAN 64->3 (21.4/17.2/17.0 against the stack kernel's 21.5/18.3/18.0); at
  // batch 1 the stack kernel leads there (6.8/6.5/6.4 against 7.7/6.8/7.0), a pick not taken yet.
  if (p.Cin_g >= 16 && p.Cout_g <= 4 && p.sh * p.sw >= 2 && (dtype != at::kFloat || tf32) &&
      phase_extent(0, p.sh, p.Hout) * phase_extent(0, p.sw, p.Wout) >= 128 && phase_extent(0, p.sw, p.Wout) >= 16 &&
      cells_supports(p, x)) {
    if (stack_rows(p, x, tf32) == 3) return {Path::kStack};
    const int np = taps_products(p, x, tf32);
    return {np > 0 && (np <= 48 || np > 64) ? Path::kTaps : Path::kCells};
  }
  if (p.Cin_g >= 16 && p.Cout_g <= 4 && (dtype != at::kFloat || tf32) && cols_tiled(p) && cols_supports(p, x, w) &&
      !cols_weights_by_element(p, x))
    return {Path::kCols};
  if (patch_supports(p) && (dtype == at::kFloat || dtype == at::kDouble || p.Cin_g < 128)) return {Path::kPatch};
  // The columns kernel, kernel == stride (U-Net's 2x2 upsampling): one GEMM a group straight from the NCHW operands,
  // every output written once by the block that computes it, where the phase paths pay a layout copy and write each
  // phase's every-other element. Measured (H100, cuDNN beside it, docs/benchmarks/variants-v14-cols.txt):
  // unet-128-64-n1 0.076-0.080 ms against wgmma's 0.130-0.156 in TF32 (cuDNN 0.164-0.174), 0.128 against 0.213 in
  // strict fp32 (cuDNN 0.311), 0.055-0.071 against 0.117-0.137 in fp16/bf16 (cuDNN 0.095-0.107); unet-512-256-n8
  // 0.68-0.71 against 0.88-0.90 strict (cuDNN 1.07), 0.156-0.187 against 0.204-0.265 fp16/bf16 (cuDNN 0.197-0.211).
  // In TF32 its mma.sync loses to wgmma on the 512-channel reduction (0.32-0.35 against 0.29-0.32 ms), so TF32
  // takes it to 128 input channels a group. Gather (images of at most 256 pixels, more than 4 output channels a
  // group; fewer go to the patch kernel above): dcgan-512-256-n64 0.066-0.069 ms against wgmma's 0.078-0.083 in
  // TF32 (cuDNN 0.059-0.066), 0.112-0.116 against 0.28 strict (cuDNN 0.27), 0.062-0.073 against 0.079-0.089 fp16;
  // dcgan-128-64-n1 0.035-0.037 against 0.043-0.048 TF32, 0.039-0.040 against 0.092 strict, 0.034-0.038 against
  // 0.044-0.051 fp16/bf16 (cuDNN 0.026-0.059: these take a few microseconds of GPU time, the rest is launch cost).
  if (p.Cin_g >= 16 && cols_supports(p, x, w)) {
    if (cols_shuffle(p) ? dtype != at::kFloat || !tf32 || p.Cin_g <= 128
                        : p.Cout_g > 4 && !cols_tiled(p) && !cols_weights_by_element(p, x))
      return {Path::kCols};
  }
  // Stride 1 (KernelBench 57-78): the dense kernel reads the NCHW input itself, one halo a chunk for every tap,
  // where the phase paths pay a channels-last copy (or, wgh, one block an SM). Measured on an H200 beside cuDNN
  // (docs/benchmarks/variants-v15-dense.txt; TF32 and half types run 1, strict fp32 run 4, each against the paths
  // taken before): 32 output channels a group in every mode (kb71 TF32 0.87 ms against 1.36, strict 1.77 against
  // 2.60, fp16 0.62 against 1.09; kb78 1.24 against 1.97, 3.17 against 5.24, 0.78 against 1.54); 64 in strict fp32
  // and half types (kb57 strict 10.9 against 14.7, fp16 3.17 against 4.24; kb65 6.0 against 8.0, 1.31 against 1.54),
  // in TF32 only past 9 taps (it ties the halo kernel on kb57, 4.70 against 4.74, and leads by 3% on kb65, 2.37
  // against 2.44); 128 in strict fp32
  // only (kb69 10.0 against 11.1), as wgmma's rate wins in TF32 and half types (kb69 TF32 4.0 against 2.56, fp16 2.34
  // against 1.76).
  // 17 or more output channels a group in half types, 17-64 in TF32: the wgmma dense kernel, warp-specialized and
  // persistent (v18). Measured on an H200 beside cuDNN (docs/benchmarks/variants-v18-dws.txt, ms; against the paths
  // taken before): fp16 kb57 1.80 (dws4) against 2.47, kb65 0.80 (dws4) against 1.15, kb69 1.38 (dws23) against
  // 1.81 (wg), kb71 0.43 (dws) against 0.61 (dense), kb78 0.58 (dws) against 0.75; TF32 kb57 3.19 (dws4) against
  // 3.64, kb65 1.51 against 1.68, kb71 0.76 against 0.82 (dense), kb78 1.11 (dws) against 1.23. At 128 output
  // channels in TF32 (kb69) it ties wgmma's phase path (2.55 against 2.49).
  // Its ping-pong form (dwp4: the two consumer warpgroups take 4-row tiles in turn, one storing while the other
  // computes) where a halo row feeds 15 or more taps: a 4-row tile's halo is 1.5x its rows against 1.25x for dws4's
  // 8, so the producer, already the limit, has more to transpose a product; the taps pay for it. GPU time alone on
  // an H200 (bench.gpu_time, session 28, ms, against the pick before): TF32 kb65 1.27 against 1.34, kb69 2.22 against
  // wgmma's 2.39; fp16 kb65 0.68 against 0.75, kb69 1.19 against 1.33; it loses at 9 taps (kb57 TF32 3.19 against
  // 2.93) and at 32 output channels (kb78 TF32 1.11 against 1.07, fp16 0.62 against 0.53).
  // At 32 output channels or fewer, channels as N (v24, 8 rows x 64 columns a consumer warpgroup), as v18 pads them
  // to wgmma's M of 64: GPU time alone on an H200 (bench.gpu_time, session 31, ms, against the pick before) TF32 kb71
  // 0.59 against 0.69, kb78 0.90 against 1.08; fp16 kb71 0.36 against 0.39, kb78 0.50 against 0.54. Its ping-pong form
  // in TF32 under 15 taps (kb71 0.55), where a tile's stores are a larger share of it; not in fp16 (kb71 0.38).
  // v25: tiles 88 columns wide where 64-column tiles pad the output more: 88 divides the widths 518 and 260 with 2%
  // of padding where 64 pads them 11% and 23%. In TF32 they win beyond the padding (an m64n88k8 reads 108 bytes of
  // shared memory a cycle against m64n64k8's 128, which the SM's shared memory cannot also serve to the producer).
  // At 3 rows (dws3, dwp3; since v26 only the fallback of the 4-row tiles below) GPU time alone on an H200
  // (bench.gpu_time, session 32, ms, against the pick before): TF32 kb69 1.81 against 2.23 (dwp4), kb65 1.05
  // against 1.28, kb57 2.86 (dws3) against 2.91 (dws4); fp16 kb69 1.02 against 1.19, kb65 0.68 against 0.69 (kept on
  // dwp4), kb57 1.89 against 1.72 (kept).
  // Half types under 15 taps at 64 output channels or fewer a group: ping-pong with each tap's weights as wgmma's A
  // from registers (dwr4), read once for a warpgroup's 4 rows (by descriptor, once a row): kb57 fp16 1.59 against
  // 1.71 (dws4), bf16 1.62 against 1.71; it loses in TF32 (kb57 3.18 against dws3's 2.87) and past 15 taps (fp16
  // kb65 0.76 against 0.69, kb69 1.25 against 1.03).
  // v26: 4 rows x 88 columns a consumer warpgroup (dwp4w, dws4w: 176 accumulators, registers taken from the producer
  // with setmaxnreg) in place of 3 x 88: the same halo rows a product as 4 x 64 and a quarter fewer weight reads a
  // product than 3 x 88. GPU time alone on an H200 (bench.gpu_time, session 33, ms, against the pick before): kb69
  // TF32 1.65-1.73 against dwp3's 1.74-1.81, fp16 0.88 against 1.03, bf16 0.86 against 1.01; kb65 TF32 1.00 against
  // 1.05, fp16 0.54 against 0.61 (dwp4, with the ring order of convt_dwg.cu's geometry); kb57 TF32 2.73 (dws4w)
  // against 2.87 (dws3). The half types keep dwr4 under 15 taps unless 88-column tiles pad 10% less (kb57 fp16 dwr4
  // 1.60-1.70 against dws4w's 1.85-1.98).
  // v28 (session 35, H100): the persistent blocks draw their tiles from a counter, which keeps vertically adjacent
  // tiles in flight together (their shared halo rows then come from L2). kb57 TF32, GPU time alone (bench.gpu_time,
  // us): dws4w 3399 -> 2642, dwp4w 3135 -> 2830, so it keeps dws4w; DRAM reads 2.95 -> 2.16 GB (the input is 2.15).
  // With tickets the half types under 15 taps take dwp4w where 88 columns pad less (kb57 fp16 1593 against dwr4's
  // 1668, bf16 1519 against 1609; dws4w 1768 and 1800).
  const bool ping_pong = p.Cout_g > 32 && p.KH * p.KW >= 15;
  const bool narrow = p.Cout_g <= 32, narrow_pp = dtype == at::kFloat && p.KH * p.KW < 15;
  if (p.sh == 1 && p.sw == 1 && p.Cin_g >= 16 && p.Cout_g > 16 && p.Hout * p.Wout >= 1024 &&
      (dtype == at::kHalf || dtype == at::kBFloat16 || (dtype == at::kFloat && tf32 && (p.Cout_g <= 64 || ping_pong)))) {
    // v27: at 32 output channels or fewer with 3 kernel rows (kb71, kb78), the window kernel: the kernel rows side by
    // side in wgmma's N, so a halo row is read once for the three output rows it feeds (channels as N read it once a
    // kernel row, at 192 bytes of shared memory a cycle). GPU time alone (bench.gpu_time, session 34, us, against
    // dwn8/dwnp8): kb78 TF32 642-646 against 894-924 (H100 and H200), fp16 422-425 against 508-514; kb71 fp16 346-361
    // against 364-395. Under 15 taps in TF32 (kb71) the window kernel's pace follows the DRAM rate and dwnp8's
    // (bound by its shared-memory reads, notes v24) does not: on the H100 (12.8 DRAM bytes an SM cycle) the window
    // kernel tied or lost (576, 659 and 668 us against 576-578, in three calls of session 34), on the H200 (18.4) it
    // won (479 against 553 in session 34, 480 against 565 in session 53). So it takes kb71 where DRAM gives 16 or more.
    // The DRAM rate is asked last: only narrow TF32 layers under 15 taps reach it.
    if (narrow && (dtype != at::kFloat || p.KH * p.KW >= 15 || dram_bytes_per_sm_cycle(x.get_device()) >= 16.0) &&
        dwin_supports(p, x, tf32))
      return {Path::kDwin};
    const bool half = dtype != at::kFloat;
    const int tile_rows = ping_pong ? 4 : 8;  // dwp4's tile, dws4's (two warpgroups of 4 rows)
    auto padded = [&](int cols) {
      return double((p.Hout + tile_rows - 1) / tile_rows * tile_rows) * double((p.Wout + cols - 1) / cols * cols);
    };
    const bool wide = padded(64) > padded(88);
    const DwgTile rows4{4, 2, 64, true}, groups3{2, 3, 64, true}, pp4{4, 2, 64, true, true};
    const DwgTile rows3{3, 2, 88, true}, pp3{3, 2, 88, true, true}, ra4{4, 2, 64, true, true, 0, true};
    const DwgTile rows4w{4, 2, 88, true}, pp4w{4, 2, 88, true, true};
    const DwgTile n8{8, 2, 64, true, false, 32}, n8p{8, 2, 64, true, true, 32};
    const DwgTile first = narrow      ? (narrow_pp ? n8p : n8)
                          : ping_pong ? (wide ? pp4w : pp4)
                          : half && p.Cout_g > 64 ? groups3
                          : half                  ? (wide ? pp4w : ra4)
                          : wide                  ? rows4w
                                                  : rows4;
    const DwgTile second = narrow ? (narrow_pp ? n8 : n8p) : ping_pong && wide ? pp3 : wide ? rows3 : rows4;
    for (const DwgTile t : {first, second, rows4, groups3, DwgTile{1, 3, 128, true}}) {
      if (dwg_supports(p, x, tf32, t)) {
        Algo a{Path::kDwg};
        a.dwg = t;
        return a;
      }
    }
  }
  if (const DenseTile t = dense_preferred(p, dtype, tf32); t.mt != 0 && dense_supports(p, x, tf32, t)) {
    Algo a{Path::kDense};
    a.dense = t;
    return a;
  }
  if (wg_ok && dtype != at::kFloat && p.Cin_g >= 32 && p.Cout_g <= kRowsMaxCout) {
    return {Path::kWg, TcTile::kAuto, WgTile::kBN32};
  }
  if (const RowsTile rows = rows_preferred(p, dtype, x.get_device()); rows.rows != 0) {
    Algo a{Path::kRows};
    a.rows = rows;
    return a;
  }
  // A stride and a short reduction an output: the stores are the time, and whole-row 16-byte stores
  // beat every per-phase kernel's strided ones (kb81 fp32 0.58 vs 1.72 ms, kb75 0.80 vs 1.52, fp16
  // 0.48 and 0.60 vs 1.03 and 1.26: docs/kernel-notes.md v11). After the rows kernel: with 1-4
  // channels a group it is 10x faster on depthwise-256-n16 (0.49 vs 4.85 ms).
  if (strip_preferred(p, dtype)) return {Path::kStrip};
  if (!tc_ok || p.Cin_g < 8 || p.Cout_g < 16 || short_k) return {Path::kFfma};
  // TF32 on Hopper, 33-64 output channels a group, phases at least 48 columns
  // wide (its tiles are 64) and a TMA-aligned input: the halo kernel, which reads
  // NCHW itself (kb57 4.80 vs 5.88 ms, kb65 2.37 vs 2.64, U-Net 128->64 0.13 vs
  // 0.16). With 32 channels it ties the box kernel, with 128 it loses (kb69 3.3 vs
  // 2.7 ms: docs/benchmarks/variants-v8-halo.txt).
  if (wg_ok && dtype == at::kFloat && p.Cout_g > 32 && p.Cout_g <= 64 && phase_extent(0, p.sw, p.Wout) >= 48 &&
      wgh_supports(p, x, WghTile::kBN64)) {
    return {Path::kWgh, TcTile::kAuto, WgTile::kAuto, WghTile::kBN64};
  }
  // wgmma where a k-chunk is full (32 channels or more) and the tile is at least 64
  // channels wide, or 32 wide in TF32: below that, or with fewer input channels,
  // mma.sync measured faster (bench.variants, docs/kernel-notes.md v6). The tile
  // is launch_wg's pick, as for a forced "wg".
  if (wg_ok && p.Cin_g >= 32 && (p.Cout_g > 32 || dtype == at::kFloat)) return {Path::kWg};
  return {Path::kTc};
}

// The strip kernel's products: on tensor cores where the precision allows them and that variant fits, unless forced
// onto FFMA.
bool strip_on_mma(const Algo& a, const ConvTParams& p, at::ScalarType dtype, bool tf32) {
  return !a.strip_ffma && strip_mma(p, dtype, tf32, a.strip);
}

void launch_cuda(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out) {
  const c10::cuda::CUDAGuard guard(x.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  // fp32 follows cuDNN's switch: TF32 products when allowed, else 3xTF32,
  // which keeps fp32 accuracy on tensor cores.
  const bool tf32 = at::globalContext().allowTF32CuDNN();
  const Algo algo = choose_algo(p, x, w, tf32);
  switch (algo.path) {
    case Path::kWgh: launch_wgh(p, x, w, b, out, algo.wgh_tile, stream); break;
    case Path::kWg: launch_wg(p, x, w, b, out, algo.wg_tile, stream); break;
    case Path::kTc: launch_tc(p, x, w, b, out, tf32 ? Fp32Mode::kTF32 : Fp32Mode::k3xTF32, algo.tc_tile, stream); break;
    case Path::kRows: launch_rows(p, x, w, b, out, algo.rows, stream); break;
    case Path::kPatch: launch_patch(p, x, w, b, out, algo.patch, stream); break;
    case Path::kCells: launch_cells(p, x, w, b, out, tf32, algo.cells, stream); break;
    case Path::kTaps: launch_taps(p, x, w, b, out, stream); break;
    case Path::kStack: launch_stack(p, x, w, b, out, stream); break;
    case Path::kCols: launch_cols(p, x, w, b, out, tf32, algo.cols, algo.cols_channels, stream); break;
    case Path::kDense: launch_dense(p, x, w, b, out, tf32, algo.dense, stream); break;
    case Path::kDwg: launch_dwg(p, x, w, b, out, algo.dwg, stream); break;
    case Path::kDwin: launch_dwin(p, x, w, b, out, stream); break;
    case Path::kStrip:
      launch_strip(p, x, w, b, out, algo.strip, strip_on_mma(algo, p, x.scalar_type(), tf32), stream);
      break;
    default: launch_ffma(p, x, w, b, out, stream);
  }
}

// The operands as the backend sees them (run_conv_transpose2d's 4-d, contiguous input), for the path queries below.
struct QueryOperands {
  at::Tensor input4, weight;
  ConvTParams p;
};
QueryOperands query_operands(const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
                             at::IntArrayRef padding, at::IntArrayRef output_padding, int64_t groups,
                             at::IntArrayRef dilation) {
  QueryOperands q{(input.dim() == 3 ? input.unsqueeze(0) : input).contiguous(), weight.contiguous(), {}};
  q.p = make_params(q.input4, q.weight, c10::nullopt, stride, padding, output_padding, groups, dilation);
  return q;
}

// The path the CUDA backend takes for these operands under the current
// CONVT_CUDA_ALGO and TF32 switch: lets the tests prove a forced path ran rather
// than fell back.
std::string cuda_path(const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
                      at::IntArrayRef padding, at::IntArrayRef output_padding, int64_t groups,
                      at::IntArrayRef dilation) {
  CONVT_CHECK(input.is_cuda(), "cuda_path: input must be a CUDA tensor");
  const c10::cuda::CUDAGuard guard(input.device());
  const QueryOperands q = query_operands(input, weight, stride, padding, output_padding, groups, dilation);
  const ConvTParams& p = q.p;
  const bool tf32 = at::globalContext().allowTF32CuDNN();
  const Algo algo = choose_algo(p, q.input4, q.weight, tf32);
  const at::ScalarType dtype = q.input4.scalar_type();
  switch (algo.path) {
    case Path::kWgh: return "wgh";
    case Path::kWg: return "wg";
    case Path::kTc: return "tc";
    case Path::kRows: return "rows";
    case Path::kPatch: return "patch";
    case Path::kCells: return "cells";
    case Path::kTaps: return "taps";
    case Path::kStack: return "stack";
    case Path::kCols: return "cols";
    case Path::kDense: return "dense";
    case Path::kDwg: return "dwg";
    case Path::kDwin: return "dwin";
    case Path::kStrip:
      // "stripf": FFMA where tensor cores were allowed (forced, or their variant did not fit)
      return strip_on_mma(algo, p, dtype, tf32) || !strip_mma_precision(dtype, tf32) ? "strip" : "stripf";
    default: return "ffma";
  }
}

// Whether the stack path, if taken, loads its later rows by its TMA ring (convt_stack.h stack_ring).
bool cuda_stack_ring(const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride, at::IntArrayRef padding,
                     at::IntArrayRef output_padding, int64_t groups, at::IntArrayRef dilation) {
  CONVT_CHECK(input.is_cuda(), "cuda_stack_ring: input must be a CUDA tensor");
  const c10::cuda::CUDAGuard guard(input.device());
  const QueryOperands q = query_operands(input, weight, stride, padding, output_padding, groups, dilation);
  return stack_ring(q.p, q.input4, at::globalContext().allowTF32CuDNN());
}

}  // namespace

CONVT_REGISTER_BACKEND(CUDA, launch_cuda)

TORCH_LIBRARY_FRAGMENT(convt, m) {
  m.def(
      "cuda_path(Tensor input, Tensor weight, int[2] stride=1, int[2] padding=0, int[2] output_padding=0, "
      "int groups=1, int[2] dilation=1) -> str",
      &cuda_path);
  m.def(
      "cuda_stack_ring(Tensor input, Tensor weight, int[2] stride=1, int[2] padding=0, int[2] output_padding=0, "
      "int groups=1, int[2] dilation=1) -> bool",
      &cuda_stack_ring);
}

}  // namespace convt
