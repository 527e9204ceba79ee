// The patch kernel: FFMA for 1-4 output channels a group, every phase of a block's
// outputs computed from one shared-memory copy of the input they read.
//
// The rows kernel (convt_rows.cu) has each phase's threads load their own windows
// from global memory, so every phase re-reads the same input, and each load pays
// 64-bit address arithmetic and a bounds predicate: ncu counted 70 M warp
// instructions for 9.3 M FFMA on fsrcnn-56-1-n1 (docs/kernel-notes.md v12). Here a
// block owns a patch of 32 phase columns x 8 * rg phase rows of one image and group
// for all sh x sw phases (a warp a phase and row group, times the split). Per chunk
// of input channels it stages the input rows and columns the patch's taps reach,
// zero outside the image, and the chunk's weights ([channel][tap][output channel]);
// then each thread walks its 8 rows: per channel and width tap one window of
// 8 + taps - 1 staged values at constant offsets, shared by the height taps, and
// one vector load of the output channels' weights per tap.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAException.h>

#include <algorithm>

#include "../convt_params.h"
#include "convt_patch.h"
#include "convt_rows.h"

namespace convt {
namespace {

constexpr int kRows = 8;          // phase rows a thread
constexpr int kPitch = 40;        // staged columns a row: 32 phase columns and up to 8 of tap reach
constexpr int kMaxWarps = 16;     // 128 registers a thread
constexpr int kMaxReachH = 16;    // rows the taps reach past a patch's rows
constexpr int kSlackRows = kRowsMaxTaps - 1;  // a window's rows past the last channel's (loaded, never used)
constexpr size_t kStageBudget = 40 * 1024;
constexpr size_t kSmemCap = 200 * 1024;  // under the 227 KB a block can opt into

struct PatchGeom {
  int ph_w;             // width phases (a warp's phase is ph_w * rh + rw)
  int rg, ks;           // row groups of 8 phase rows; warps splitting a chunk's input channels
  int oh0, ow0;         // least input offset any phase's tap reads: the staged patch's first row and column
  int srows;            // staged rows a channel: 8 * rg + the taps' reach
  int cc;               // input channels a chunk
  int tiles_w, tiles_h;
};

template <typename acc_t, int CO_T>
__device__ __forceinline__ void load_weights(const acc_t* p, acc_t (&v)[CO_T]) {
  // [channel][tap][output channel] with CO_T-aligned rows: one or two vector loads, a broadcast.
  constexpr int kVec = CO_T * sizeof(acc_t) > 16 ? 16 / sizeof(acc_t) : CO_T;
  struct alignas(kVec * sizeof(acc_t)) Vec { acc_t v[kVec]; };
#pragma unroll
  for (int h = 0; h < CO_T; h += kVec) {
    const Vec q = *reinterpret_cast<const Vec*>(p + h);
#pragma unroll
    for (int e = 0; e < kVec; ++e) v[h + e] = q.v[e];
  }
}

template <typename scalar_t, typename acc_t, int CO_T, int NTH>
__global__ void __launch_bounds__(kMaxWarps * 32)
    convt_patch_kernel(const ConvTParams p, const PatchGeom pg, const scalar_t* __restrict__ x,
                       const scalar_t* __restrict__ w, const scalar_t* __restrict__ bias, scalar_t* __restrict__ y) {
  constexpr int kWin = kRows + NTH - 1;
  extern __shared__ __align__(16) unsigned char patch_smem[];
  acc_t* xs = reinterpret_cast<acc_t*>(patch_smem);
  const int KK = static_cast<int>(p.KH * p.KW);
  const int cstride = pg.srows * kPitch;
  acc_t* ws = xs + pg.cc * cstride + kSlackRows * kPitch;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int nthreads = blockDim.x, nwarps = nthreads >> 5;
  const int part = warp % pg.ks, task = warp / pg.ks;
  const int rgi = task % pg.rg, phase = task / pg.rg;
  const int rh = phase / pg.ph_w, rw = phase % pg.ph_w;
  int64_t blk = blockIdx.x;
  const int tile_w = static_cast<int>(blk % pg.tiles_w);
  blk /= pg.tiles_w;
  const int tile_h = static_cast<int>(blk % pg.tiles_h);
  blk /= pg.tiles_h;
  const int64_t g = blk % p.groups, n = blk / p.groups;
  const int mh0 = tile_h * kRows * pg.rg, mw0 = tile_w * 32;

  const PhaseTaps th = phase_taps(rh, p.ph, p.sh, p.dh, p.KH);
  const PhaseTaps tw = phase_taps(rw, p.pw, p.sw, p.dw, p.KW);
  const bool taps = th.k0 < p.KH && tw.k0 < p.KW;  // else a pure fill: bias or zero
  const int nth = taps ? static_cast<int>((p.KH - 1 - th.k0) / th.step + 1) : 0;
  const int ntw = taps ? static_cast<int>((p.KW - 1 - tw.k0) / tw.step + 1) : 0;
  // Height dilation 1: a phase's height taps read consecutive rows, the last tap's first. Tap i of the
  // window (counted from the last) is kernel row k0 + (nth - 1 - i) * step.
  int wrow[NTH];
#pragma unroll
  for (int i = 0; i < NTH; ++i) wrow[i] = i < nth ? static_cast<int>((th.k0 + (nth - 1 - i) * th.step) * p.KW) * CO_T : 0;
  const int off_h = taps ? static_cast<int>(tap_offset(rh, p.ph, p.sh, p.dh, th.k0)) - (nth - 1) : 0;
  const int off_w = taps ? static_cast<int>(tap_offset(rw, p.pw, p.sw, p.dw, tw.k0)) : 0;
  const int dbw = static_cast<int>(tw.step * p.dw / p.sw);  // columns between consecutive width taps
  const acc_t* x_win = xs + (rgi * kRows + off_h - pg.oh0) * kPitch + lane + off_w - pg.ow0;
  const acc_t* w_tap0 = ws + static_cast<int>(tw.k0) * CO_T;
  const int w_step = static_cast<int>(tw.step) * CO_T;

  for (int e = tid; e < kSlackRows * kPitch; e += nthreads) xs[pg.cc * cstride + e] = acc_t(0);

  acc_t acc[CO_T][kRows];
#pragma unroll
  for (int c = 0; c < CO_T; ++c)
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[c][r] = acc_t(0);

  const int64_t HWin = p.Hin * p.Win;
  const scalar_t* x_ng = x + (n * p.Cin + g * p.Cin_g) * HWin;
  const scalar_t* w_g = w + g * p.Cin_g * p.Cout_g * KK;
  const int64_t ih0 = mh0 + pg.oh0, iw0 = mw0 + pg.ow0;
  for (int64_t ci0 = 0; ci0 < p.Cin_g; ci0 += pg.cc) {
    const int cnt = static_cast<int>(std::min<int64_t>(pg.cc, p.Cin_g - ci0));
    __syncthreads();  // the previous chunk's windows are read
    // A warp a staged row: coalesced loads, consecutive shared stores.
    for (int rr = warp; rr < cnt * pg.srows; rr += nwarps) {
      const int c = rr / pg.srows, sr = rr - c * pg.srows;
      const int64_t ih = ih0 + sr;
      acc_t* dst = xs + c * cstride + sr * kPitch;
      const bool row_in = ih >= 0 && ih < p.Hin;
      const scalar_t* src = x_ng + (ci0 + c) * HWin + (row_in ? ih : 0) * p.Win;
      for (int sc = lane; sc < kPitch; sc += 32) {
        const int64_t iw = iw0 + sc;
        dst[sc] = row_in && iw >= 0 && iw < p.Win ? static_cast<acc_t>(src[iw]) : acc_t(0);
      }
    }
    const scalar_t* w_c = w_g + ci0 * p.Cout_g * KK;
    for (int e = tid; e < cnt * KK * CO_T; e += nthreads) {
      const int co = e % CO_T, k = (e / CO_T) % KK, c = e / (CO_T * KK);
      ws[e] = co < p.Cout_g ? static_cast<acc_t>(w_c[(c * p.Cout_g + co) * KK + k]) : acc_t(0);
    }
    __syncthreads();
    if (!taps) continue;
    for (int c = part; c < cnt; c += pg.ks) {
      const acc_t* xc = x_win + c * cstride;
      const acc_t* wc = w_tap0 + c * KK * CO_T;
      for (int j = 0; j < ntw; ++j, xc -= dbw, wc += w_step) {
        acc_t xv[kWin];
#pragma unroll
        for (int u = 0; u < kWin; ++u) xv[u] = xc[u * kPitch];
#pragma unroll
        for (int i = 0; i < NTH; ++i) {
          if (i < nth) {
            acc_t wv[CO_T];
            load_weights<acc_t, CO_T>(wc + wrow[i], wv);
#pragma unroll
            for (int co = 0; co < CO_T; ++co)
#pragma unroll
              for (int r = 0; r < kRows; ++r) acc[co][r] += wv[co] * xv[r + i];
          }
        }
      }
    }
  }

  constexpr int kOut = CO_T * kRows;
  if (pg.ks > 1) {
    // The split's partial sums meet in shared memory (the staging area, free now); each warp of a split set
    // then sums and stores every ks-th of the set's outputs.
    __syncthreads();
    acc_t* red = xs;
#pragma unroll
    for (int c = 0; c < CO_T; ++c)
#pragma unroll
      for (int r = 0; r < kRows; ++r) red[(warp * kOut + c * kRows + r) * 32 + lane] = acc[c][r];
    __syncthreads();
    const int set = warp - part;
#pragma unroll
    for (int j = 0; j < kOut; ++j) {
      if (j % pg.ks == part) {
        acc_t sum = acc_t(0);
        for (int k = 0; k < pg.ks; ++k) sum += red[((set + k) * kOut + j) * 32 + lane];
        acc[j / kRows][j % kRows] = sum;
      }
    }
  }

  const int64_t Mh = phase_extent(rh, p.sh, p.Hout), Mw = phase_extent(rw, p.sw, p.Wout);
  const int64_t mw = mw0 + lane;
  if (mw >= Mw) return;
#pragma unroll
  for (int c = 0; c < CO_T; ++c) {
    if (c < p.Cout_g) {
      const int64_t oc = g * p.Cout_g + c;
      const acc_t bv = bias != nullptr ? static_cast<acc_t>(bias[oc]) : acc_t(0);
      scalar_t* y_c = y + ((n * p.Cout + oc) * p.Hout + rh) * p.Wout + rw + mw * p.sw;
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const int64_t mh = mh0 + rgi * kRows + r;
        if (mh < Mh && (c * kRows + r) % pg.ks == part) y_c[mh * p.sh * p.Wout] = static_cast<scalar_t>(acc[c][r] + bv);
      }
    }
  }
}

// Least and greatest input offset any phase's taps read along one axis (0, 0 with no taps at all).
void tap_reach(int64_t pad, int64_t stride, int64_t dil, int64_t K, int64_t phases, int64_t& lo, int64_t& hi) {
  bool any = false;
  lo = hi = 0;
  for (int64_t r = 0; r < phases; ++r) {
    const PhaseTaps t = phase_taps(r, pad, stride, dil, K);
    for (int64_t k = t.k0; k < K; k += t.step) {
      const int64_t o = tap_offset(r, pad, stride, dil, k);
      lo = any ? std::min(lo, o) : o;
      hi = any ? std::max(hi, o) : o;
      any = true;
    }
  }
}

int phases(const ConvTParams& p) { return static_cast<int>(std::min(p.sh, p.Hout) * std::min(p.sw, p.Wout)); }

int co_tile(const ConvTParams& p) { return p.Cout_g == 1 ? 1 : p.Cout_g == 2 ? 2 : 4; }

// Row groups: 8 warps a block where the phases are fewer (rounded down to a power of two).
int row_groups(const ConvTParams& p) {
  int rg = 1;
  while (phases(p) * rg * 2 <= 8) rg *= 2;
  return rg;
}

size_t stage_bytes(const ConvTParams& p, const PatchGeom& pg, size_t elem) {
  return ((size_t(pg.cc) * pg.srows + kSlackRows) * kPitch + size_t(pg.cc) * p.KH * p.KW * co_tile(p)) * elem;
}

size_t smem_bytes(const ConvTParams& p, const PatchGeom& pg, size_t elem) {
  const size_t warps = size_t(phases(p)) * pg.rg * pg.ks;
  const size_t red = pg.ks > 1 ? warps * co_tile(p) * kRows * 32 * elem : 0;
  return std::max(stage_bytes(p, pg, elem), red);
}

PatchGeom geometry(const ConvTParams& p, int ks, size_t elem) {
  PatchGeom pg{};
  pg.ph_w = static_cast<int>(std::min(p.sw, p.Wout));
  pg.rg = row_groups(p);
  pg.ks = ks;
  int64_t lo_h, hi_h, lo_w, hi_w;
  tap_reach(p.ph, p.sh, p.dh, p.KH, std::min(p.sh, p.Hout), lo_h, hi_h);
  tap_reach(p.pw, p.sw, p.dw, p.KW, pg.ph_w, lo_w, hi_w);
  pg.oh0 = static_cast<int>(lo_h);
  pg.ow0 = static_cast<int>(lo_w);
  pg.srows = static_cast<int>(kRows * pg.rg + hi_h - lo_h);
  pg.tiles_h = static_cast<int>((phase_extent(0, p.sh, p.Hout) + kRows * pg.rg - 1) / (kRows * pg.rg));
  pg.tiles_w = static_cast<int>((phase_extent(0, p.sw, p.Wout) + 31) / 32);
  // 8 channels a chunk, at least 4 a warp of the split; fewer where the stage passes its budget.
  pg.cc = static_cast<int>(std::min<int64_t>(p.Cin_g, std::max(8, 4 * ks)));
  while (pg.cc > ks && stage_bytes(p, pg, elem) > kStageBudget) pg.cc = std::max(ks, pg.cc / 2);
  return pg;
}

int64_t blocks(const ConvTParams& p, const PatchGeom& pg) { return int64_t(pg.tiles_h) * pg.tiles_w * p.N * p.groups; }

template <typename scalar_t, int CO_T, int NTH>
void launch(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
            const PatchGeom& pg, cudaStream_t stream) {
  using acc_t = at::opmath_type<scalar_t>;
  const size_t smem = smem_bytes(p, pg, sizeof(acc_t));
  auto kernel = convt_patch_kernel<scalar_t, acc_t, CO_T, NTH>;
  if (smem > 48 * 1024) C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  const int warps = phases(p) * pg.rg * pg.ks;
  kernel<<<static_cast<unsigned>(blocks(p, pg)), warps * 32, smem, stream>>>(
      p, pg, x.const_data_ptr<scalar_t>(), w.const_data_ptr<scalar_t>(),
      b.defined() ? b.const_data_ptr<scalar_t>() : nullptr, out.mutable_data_ptr<scalar_t>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename scalar_t, int CO_T>
void launch_taps(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 const PatchGeom& pg, cudaStream_t stream) {
  const int64_t t = (p.KH + p.sh - 1) / p.sh;
  if (t <= 2) {
    launch<scalar_t, CO_T, 2>(p, x, w, b, out, pg, stream);
  } else if (t <= 3) {
    launch<scalar_t, CO_T, 3>(p, x, w, b, out, pg, stream);
  } else {
    launch<scalar_t, CO_T, kRowsMaxTaps>(p, x, w, b, out, pg, stream);
  }
}

}  // namespace

bool patch_supports(const ConvTParams& p) {
  if (p.Cout_g < 1 || p.Cout_g > kRowsMaxCout || p.dh != 1 || (p.KH + p.sh - 1) / p.sh > kRowsMaxTaps) return false;
  if (phases(p) > kMaxWarps || p.KH * p.KW > 1024) return false;
  const int64_t lim = int64_t(1) << 30;
  if (p.Hin >= lim || p.Win >= lim || p.Hout >= lim || p.Wout >= lim) return false;
  int64_t lo_h, hi_h, lo_w, hi_w;
  tap_reach(p.ph, p.sh, p.dh, p.KH, std::min(p.sh, p.Hout), lo_h, hi_h);
  tap_reach(p.pw, p.sw, p.dw, p.KW, std::min(p.sw, p.Wout), lo_w, hi_w);
  if (hi_h - lo_h > kMaxReachH || hi_w - lo_w > kPitch - 32 || std::abs(lo_h) >= lim || std::abs(lo_w) >= lim) return false;
  // One channel a chunk must fit the shared memory a block can have (double, no split).
  const PatchGeom pg = geometry(p, 1, sizeof(double));
  return stage_bytes(p, pg, sizeof(double)) <= kSmemCap && blocks(p, pg) < (int64_t(1) << 31);
}

// The split with the least (waves at 16 resident warps an SM) x (channels a warp), as the rows kernel's: at
// least 4 input channels a warp, 16 warps a block at most; ties to the smaller.
int patch_auto_split(const ConvTParams& p, int device) {
  int sms = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int64_t cap = int64_t(sms) * 16;
  const int64_t warps = blocks(p, geometry(p, 1, sizeof(float))) * phases(p) * row_groups(p);
  int best = 1;
  double best_t = static_cast<double>((warps + cap - 1) / cap);
  for (int ks = 2; ks <= 4 && p.Cin_g >= 4 * ks && phases(p) * row_groups(p) * ks <= kMaxWarps; ks *= 2) {
    const double t = static_cast<double>((warps * ks + cap - 1) / cap) / ks;
    if (t < best_t) best = ks, best_t = t;
  }
  return best;
}

void launch_patch(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                  int split, cudaStream_t stream) {
  TORCH_CHECK(patch_supports(p), "convt: the patch kernel does not take this problem");
  if (split == 0) split = patch_auto_split(p, x.get_device());
  // A forced split past 16 warps a block comes down to what fits.
  while (split > 1 && phases(p) * row_groups(p) * split > kMaxWarps) split /= 2;
  TORCH_CHECK(split == 1 || split == 2 || split == 4, "convt: the patch kernel splits over 1, 2 or 4 warps, not ", split);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "convt_patch", [&] {
    constexpr size_t elem = sizeof(at::opmath_type<scalar_t>);
    PatchGeom pg = geometry(p, split, elem);
    while (pg.ks > 1 && smem_bytes(p, pg, elem) > kSmemCap) pg = geometry(p, pg.ks / 2, elem);
    if (p.Cout_g == 1) {
      launch_taps<scalar_t, 1>(p, x, w, b, out, pg, stream);
    } else if (p.Cout_g == 2) {
      launch_taps<scalar_t, 2>(p, x, w, b, out, pg, stream);
    } else {
      launch_taps<scalar_t, 4>(p, x, w, b, out, pg, stream);
    }
  });
}

}  // namespace convt
