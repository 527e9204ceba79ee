// The patch kernel: FFMA for 1-4 output channels a group, every phase of a block's
// outputs computed from one shared-memory copy of the input they read.
//
// The rows kernel (convt_rows.cu) has each phase's threads load their own windows
// from global memory, so every phase re-reads the same input, and each load pays
// 64-bit address arithmetic and a bounds predicate: ncu counted 70 M warp
// instructions for 9.3 M FFMA on fsrcnn-56-1-n1 (docs/kernel-notes.md v12). Here a
// block owns a patch of 32 phase columns x rows * rg phase rows of one image and group
// for all sh x sw phases (a warp a phase and row group, times the split). Per chunk
// of input channels it stages the input rows and columns the patch's taps reach,
// zero outside the image, and the chunk's weights ([channel][tap][output channel]);
// then each thread walks its rows (16 or 8): per channel and width tap one window of
// rows + taps - 1 staged values at constant offsets, shared by the height taps, and
// one vector load of the output channels' weights per tap.
//
// Staging is what the first version lost on (3x its prediction; docs/kernel-notes.md
// v13): each staged row waited for its global load before the next was issued. Now
// chunks of 16 channels go through three shared-memory buffers by cp.async (16-byte
// copies where rows are 16-byte aligned, all-or-nothing at the image edge), landing
// while the two chunks before them compute, one barrier a chunk; half types convert
// on the way, four rows of loads in flight. Each phase's taps and offsets come
// worked out from the host (PatchPhase).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAException.h>

#include <algorithm>

#include "../convt_params.h"
#include "convt_patch.h"
#include "convt_rows.h"
#include "smem_attr.h"

namespace convt {
namespace {

#include "cp_async.cuh"

// Phase rows a thread: 16 for one output channel (a window of 16 + taps - 1 loads serves 16 x taps FFMA a
// width tap), 8 for more (their accumulators are CO_T x rows).
template <int CO_T>
constexpr int thread_rows() { return CO_T == 1 ? 16 : 8; }
constexpr int kMaxReachW = 8;     // columns the taps reach past a patch's 32
constexpr int kPitch = 32 + kMaxReachW + 4;  // staged columns a row: the patch's, the reach, up to 3 of 16-byte alignment
constexpr int kMaxWarps = 16;     // 128 registers a thread; phases at most
constexpr int kMaxWarpsOne = 24;  // 80 registers a thread (one float output channel)
constexpr int kMaxReachH = 16;    // rows the taps reach past a patch's rows
constexpr int kStages = 3;       // stage buffers a block
constexpr size_t kStageBudget = 40 * 1024;  // bytes a stage buffer
constexpr size_t kSmemCap = 200 * 1024;  // under the 227 KB a block can opt into

// One phase's taps and place, worked out on the host (the divisions they take were a sixth of a block's
// instructions on dcgan-64-3).
struct PatchPhase {
  int nth, ntw;         // height and width taps (0: a pure fill, bias or zero)
  int win;              // staged element of its first window, less the row group's rows and the lane
  int w_tap0;           // kernel tap (kh * KW + kw) of that window: the last height tap, the first width tap
  int w_h, w_step;      // taps between consecutive height taps of the window, between width taps
  int dbw;              // staged columns between consecutive width taps
  int rh, rw;           // output phase
  int mh, mw;           // phase rows and columns of the output
};

struct PatchGeom {
  PatchPhase ph[kMaxWarps];  // a warp's phase is task / rg
  int rg, ks;           // row groups (thread_rows phase rows each); warps splitting a chunk's input channels
  int oh0, ow0;         // least input offset any phase's tap reads: the staged patch's first row and column
  int srows;            // staged rows a channel: thread_rows * rg + the taps' reach
  int cc;               // input channels a chunk
  int tiles_w, tiles_h;
  int vec;              // elements a staging copy: 16 bytes' worth where every row is 16-byte aligned, else 1
  int shift;            // staged columns before ow0, so that 16-byte copies start aligned
};

// Elements of one stage buffer, a multiple of 4 so that the next buffer's weights stay 16-byte aligned.
__host__ __device__ inline int stage_len(int cc, int cstride, int chan_w) { return (cc * cstride + cc * chan_w + 3) & ~3; }

// Output channels staged a tap: three are padded to four, so that a tap's weights stay one aligned vector.
template <int CO_T>
constexpr int staged_co() { return CO_T == 3 ? 4 : CO_T; }

template <typename acc_t, int CO_T>
__device__ __forceinline__ void load_weights(const acc_t* p, acc_t (&v)[CO_T]) {
  // [channel][tap][output channel] with aligned rows of staged_co: one or two vector loads, a broadcast.
  constexpr int kS = staged_co<CO_T>();
  constexpr int kVec = kS * sizeof(acc_t) > 16 ? 16 / sizeof(acc_t) : kS;
  struct alignas(kVec * sizeof(acc_t)) Vec { acc_t v[kVec]; };
#pragma unroll
  for (int h = 0; h < kS; h += kVec) {
    const Vec q = *reinterpret_cast<const Vec*>(p + h);
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      if (h + e < CO_T) v[h + e] = q.v[e];
  }
}

// Asynchronous 4- or 8-byte copy to shared memory; zero-filled where !valid (src is then not read).
template <typename T>
__device__ __forceinline__ void cp_async_zfill(T* dst, const T* src, bool valid) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "cp.async copies 4, 8 or 16 bytes");
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(d), "l"(src), "n"(sizeof(T)),
               "r"(valid ? static_cast<int>(sizeof(T)) : 0)
               : "memory");
}

// A chunk's weights as [channel][tap][output channel], rows padded to staged_co with zeros.
template <typename scalar_t, typename acc_t, int CO_T>
__device__ __forceinline__ void stage_weights(const ConvTParams& p, const scalar_t* w_c, int cnt, acc_t* ws) {
  constexpr bool kAsync = sizeof(scalar_t) == sizeof(acc_t);
  const int tid = threadIdx.x, nthreads = blockDim.x;
  const int KK = static_cast<int>(p.KH * p.KW);
  constexpr int kS = staged_co<CO_T>();
  for (int e = tid; e < cnt * KK * kS; e += nthreads) {
    const int co = e % kS, k = (e / kS) % KK, c = e / (kS * KK);
    const bool valid = co < p.Cout_g;
    const scalar_t* src = w_c + (c * p.Cout_g + (valid ? co : 0)) * KK + k;
    if constexpr (kAsync) {
      cp_async_zfill(ws + e, src, valid);
    } else {
      ws[e] = valid ? static_cast<acc_t>(*src) : acc_t(0);
    }
  }
}

// Copies one chunk's input patch (zero outside the image) and weights to a stage buffer. Where the
// staged type is the tensor's (fp32, double) the copies are asynchronous and land while the two chunks
// before it compute; half types convert on the way, so their loads go four rows at a time to overlap latency.
template <typename scalar_t, typename acc_t, int CO_T>
__device__ __forceinline__ void stage_chunk(const ConvTParams& p, const PatchGeom& pg, const scalar_t* x_c,
                                            const scalar_t* w_c, int64_t ih0, int64_t iw0, int cnt, acc_t* xs,
                                            acc_t* ws) {
  constexpr bool kAsync = sizeof(scalar_t) == sizeof(acc_t);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, nwarps = blockDim.x >> 5, nthreads = blockDim.x;
  const int64_t HWin = p.Hin * p.Win;
  const int rows = cnt * pg.srows;
  if constexpr (kAsync) {
    if (pg.vec > 1) {
      // Rows 16-byte aligned (the host checked): a copy of vec columns is wholly inside the image or outside
      // it, and the block's threads share the chunk's rows x (kPitch / vec) copies.
      constexpr int kV = 16 / sizeof(acc_t), kCopies = kPitch / kV;
      const int64_t cb = iw0 - pg.shift;
      for (int e = tid; e < rows * kCopies; e += nthreads) {
        const int rr = e / kCopies, q = e - rr * kCopies;
        const int c = rr / pg.srows, sr = rr - c * pg.srows;
        const int64_t ih = ih0 + sr, iw = cb + q * kV;
        const bool ok = ih >= 0 && ih < p.Hin && iw >= 0 && iw < p.Win;
        cp_async16_zfill(xs + rr * kPitch + q * kV, ok ? x_c + c * HWin + ih * p.Win + iw : x_c, ok);
      }
      stage_weights<scalar_t, acc_t, CO_T>(p, w_c, cnt, ws);
      return;
    }
  }
  // A warp a staged row; lanes below kPitch - 32 take its last columns too.
  const int64_t iw_a = iw0 + lane;
  const bool col_a = iw_a >= 0 && iw_a < p.Win, col_b = lane < kPitch - 32 && iw_a + 32 >= 0 && iw_a + 32 < p.Win;
  // This warp's rows rr = warp, warp + nwarps, ... of the chunk: row sr of channel rr / srows, whose staged
  // columns start at xa + off; stepped with additions only.
  int rr = warp, sr = warp, c0 = 0;
  while (sr >= pg.srows) sr -= pg.srows, ++c0;
  int64_t off = c0 * HWin + (ih0 + sr) * p.Win;
  const int64_t step = int64_t(nwarps) * p.Win, wrap = HWin - int64_t(pg.srows) * p.Win;
  auto next_row = [&] {
    rr += nwarps, sr += nwarps, off += step;
    while (sr >= pg.srows) sr -= pg.srows, off += wrap;
  };
  const scalar_t* xa = x_c + iw_a;  // dereferenced only where the column is inside the image
  if constexpr (kAsync) {
    for (; rr < rows; next_row()) {
      const bool row_in = static_cast<uint64_t>(ih0 + sr) < static_cast<uint64_t>(p.Hin);
      acc_t* dst = xs + rr * kPitch + lane;
      cp_async_zfill(dst, row_in && col_a ? xa + off : x_c, row_in && col_a);
      if (lane < kPitch - 32) cp_async_zfill(dst + 32, row_in && col_b ? xa + off + 32 : x_c, row_in && col_b);
    }
  } else {
    constexpr int kBatch = 4;
    while (rr < rows) {
      acc_t va[kBatch], vb[kBatch];
      int at[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u, next_row()) {
        const bool row_in = rr < rows && static_cast<uint64_t>(ih0 + sr) < static_cast<uint64_t>(p.Hin);
        at[u] = rr;
        va[u] = row_in && col_a ? static_cast<acc_t>(xa[off]) : acc_t(0);
        vb[u] = row_in && col_b ? static_cast<acc_t>(xa[off + 32]) : acc_t(0);
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        if (at[u] < rows) {
          xs[at[u] * kPitch + lane] = va[u];
          if (lane < kPitch - 32) xs[at[u] * kPitch + lane + 32] = vb[u];
        }
      }
    }
  }
  stage_weights<scalar_t, acc_t, CO_T>(p, w_c, cnt, ws);
}

// Where a warp's windows and weights sit in a stage buffer, and how it walks them.
template <typename acc_t>
struct TapWalk {
  const acc_t* x_win;  // the window of the first channel's first width tap
  const acc_t* w_tap;  // the weights of its first height tap of the window (the kernel's last row of the phase)
  int cstride, chan_w;  // elements between channels of input, of weights
  int ntw, dbw, w_step;  // width taps; staged columns and weight elements between consecutive ones
  int w_h;               // weight elements between consecutive height taps of the window
  int part, ks;          // this warp's share of the chunk's channels
};

// One chunk's taps for a phase with NT height taps; NT is a template parameter, so that the tap loop has no
// branches; a phase's taps may be fewer than the kernel's (NTH), down to one.
template <typename acc_t, int CO_T, int NT>
__device__ __forceinline__ void chunk_taps(const TapWalk<acc_t>& t, int nth, int cnt,
                                           acc_t (&acc)[CO_T][thread_rows<CO_T>()]) {
  constexpr int kRows = thread_rows<CO_T>();
  if constexpr (NT > 1) {
    if (nth < NT) return chunk_taps<acc_t, CO_T, NT - 1>(t, nth, cnt, acc);
  }
  for (int c = t.part; c < cnt; c += t.ks) {
    const acc_t* xc = t.x_win + c * t.cstride;
    const acc_t* wc = t.w_tap + c * t.chan_w;
    for (int j = 0; j < t.ntw; ++j, xc -= t.dbw, wc += t.w_step) {
      acc_t xv[kRows + NT - 1];
#pragma unroll
      for (int u = 0; u < kRows + NT - 1; ++u) xv[u] = xc[u * kPitch];
#pragma unroll
      for (int i = 0; i < NT; ++i) {
        acc_t wv[CO_T];
        load_weights<acc_t, CO_T>(wc + i * t.w_h, wv);
#pragma unroll
        for (int co = 0; co < CO_T; ++co)
#pragma unroll
          for (int r = 0; r < kRows; ++r) acc[co][r] += wv[co] * xv[r + i];
      }
    }
  }
}

// Registers: 80 for one float output channel, so that its blocks can have up to 24 warps (fsrcnn's 9 phases
// split over 2; at ptxas's own ~100 a 9-warp block already filled an SM partition's 16 K registers);
// 128 otherwise (80 spilled).
template <typename scalar_t, typename acc_t, int CO_T, int NTH>
__global__ void __launch_bounds__((CO_T == 1 && sizeof(acc_t) == 4 ? kMaxWarpsOne : kMaxWarps) * 32)
    __maxnreg__(CO_T == 1 && sizeof(acc_t) == 4 ? 80 : 128)
    convt_patch_kernel(const ConvTParams p, const PatchGeom pg, const scalar_t* __restrict__ x,
                       const scalar_t* __restrict__ w, const scalar_t* __restrict__ bias, scalar_t* __restrict__ y) {
  extern __shared__ __align__(16) unsigned char patch_smem[];
  acc_t* smem = reinterpret_cast<acc_t*>(patch_smem);
  const int KK = static_cast<int>(p.KH * p.KW);
  constexpr int kS = staged_co<CO_T>();
  const int cstride = pg.srows * kPitch;
  const int xs_len = pg.cc * cstride;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int part = warp % pg.ks, task = warp / pg.ks;
  const int rgi = task % pg.rg;
  const PatchPhase& ph = pg.ph[task / pg.rg];
  unsigned blk = blockIdx.x;  // blocks < 2^31 (patch_supports)
  const int tile_w = static_cast<int>(blk % pg.tiles_w);
  blk /= pg.tiles_w;
  const int tile_h = static_cast<int>(blk % pg.tiles_h);
  blk /= pg.tiles_h;
  const int64_t g = blk % p.groups, n = blk / p.groups;
  constexpr int kRows = thread_rows<CO_T>();
  const int mh0 = tile_h * kRows * pg.rg, mw0 = tile_w * 32;
  const int nth = ph.nth;
  const int win0 = rgi * kRows * kPitch + lane + ph.win;

  // Stage buffers, each [channel][row][column] input then [channel][tap][output channel] weights.
  const int buf_len = stage_len(pg.cc, cstride, KK * kS);

  acc_t acc[CO_T][kRows];
#pragma unroll
  for (int c = 0; c < CO_T; ++c)
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[c][r] = acc_t(0);

  const int64_t HWin = p.Hin * p.Win;
  const scalar_t* x_ng = x + (n * p.Cin + g * p.Cin_g) * HWin;
  const scalar_t* w_g = w + g * p.Cin_g * p.Cout_g * KK;
  const int64_t ih0 = mh0 + pg.oh0, iw0 = mw0 + pg.ow0;
  const int nchunks = static_cast<int>((p.Cin_g + pg.cc - 1) / pg.cc);
  auto chunk_len = [&](int k) { return static_cast<int>(std::min<int64_t>(pg.cc, p.Cin_g - int64_t(k) * pg.cc)); };
  auto stage = [&](int k) {
    acc_t* buf = smem + (k % kStages) * buf_len;
    const int64_t ci0 = int64_t(k) * pg.cc;
    stage_chunk<scalar_t, acc_t, CO_T>(p, pg, x_ng + ci0 * HWin, w_g + ci0 * p.Cout_g * KK, ih0, iw0, chunk_len(k),
                                       buf, buf + xs_len);
  };
  // Three stage buffers, so that one barrier a chunk both publishes chunk k and frees chunk k - 1's buffer
  // for chunk k + 2, whose copies then land while chunks k and k + 1 compute.
  stage(0);
  cp_async_commit();
  if (nchunks > 1) stage(1);
  cp_async_commit();
  for (int k = 0; k < nchunks; ++k) {
    cp_async_wait<1>();  // this thread's copies of chunk k have landed
    __syncthreads();        // and every thread's; and every warp is done with chunk k - 1
    if (k + 2 < nchunks) stage(k + 2);
    cp_async_commit();
    if (nth > 0) {
      const acc_t* buf = smem + (k % kStages) * buf_len;
      const TapWalk<acc_t> walk{buf + win0, buf + xs_len + ph.w_tap0 * kS, cstride, KK * kS, ph.ntw, ph.dbw,
                                ph.w_step * kS, ph.w_h * kS, part, pg.ks};
      chunk_taps<acc_t, CO_T, NTH>(walk, nth, chunk_len(k), acc);
    }
  }

  constexpr int kOut = CO_T * kRows;
  if (pg.ks > 1) {
    // The split's partial sums meet in shared memory (the staging area, free now); each warp of a split set
    // then sums and stores every ks-th of the set's outputs.
    __syncthreads();
    acc_t* red = smem;
#pragma unroll
    for (int c = 0; c < CO_T; ++c)
#pragma unroll
      for (int r = 0; r < kRows; ++r) red[(warp * kOut + c * kRows + r) * 32 + lane] = acc[c][r];
    __syncthreads();
    const acc_t* mine = red + (warp - part) * kOut * 32 + lane;
#pragma unroll
    for (int j = 0; j < kOut; ++j) {
      if ((j & (pg.ks - 1)) == part) {  // ks is 2 or 4
        acc_t sum = mine[j * 32];
#pragma unroll
        for (int k = 1; k < 4; ++k)
          if (k < pg.ks) sum += mine[(k * kOut + j) * 32];
        acc[j / kRows][j % kRows] = sum;
      }
    }
  }

  const int mw = mw0 + lane, mh = mh0 + rgi * kRows;
  if (mw >= ph.mw) return;
  const int rows = min(ph.mh - mh, kRows + 0);
  const int64_t row_step = p.sh * p.Wout;
#pragma unroll
  for (int c = 0; c < CO_T; ++c) {
    if (c < p.Cout_g) {
      const int64_t oc = g * p.Cout_g + c;
      const acc_t bv = bias != nullptr ? static_cast<acc_t>(bias[oc]) : acc_t(0);
      scalar_t* y_c = y + ((n * p.Cout + oc) * p.Hout + ph.rh + mh * p.sh) * p.Wout + ph.rw + int64_t(mw) * p.sw;
#pragma unroll
      for (int r = 0; r < kRows; ++r, y_c += row_step)
        if (r < rows && ((c * kRows + r) & (pg.ks - 1)) == part) *y_c = static_cast<scalar_t>(acc[c][r] + bv);
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

// Warps a block can have: 24 at 80 registers a thread (one float output channel), else 16 at 128.
int max_warps(const ConvTParams& p, size_t acc_bytes) { return p.Cout_g == 1 && acc_bytes == 4 ? kMaxWarpsOne : kMaxWarps; }

int rows_a_thread(const ConvTParams& p) { return p.Cout_g == 1 ? thread_rows<1>() : thread_rows<2>(); }

// Output channels staged a tap (staged_co).
int co_tile(const ConvTParams& p) { return p.Cout_g <= 2 ? static_cast<int>(p.Cout_g) : 4; }

// Row groups: 8 warps a block where the phases are fewer (rounded down to a power of two).
int row_groups(const ConvTParams& p) {
  int rg = 1;
  while (phases(p) * rg * 2 <= 8) rg *= 2;
  return rg;
}

// One stage buffer (a block has kStages).
size_t stage_bytes(const ConvTParams& p, const PatchGeom& pg, size_t elem) {
  return size_t(stage_len(pg.cc, pg.srows * kPitch, static_cast<int>(p.KH * p.KW) * co_tile(p))) * elem;
}

size_t smem_bytes(const ConvTParams& p, const PatchGeom& pg, size_t elem) {
  const size_t warps = size_t(phases(p)) * pg.rg * pg.ks;
  const size_t red = pg.ks > 1 ? warps * co_tile(p) * rows_a_thread(p) * 32 * elem : 0;
  return std::max(kStages * stage_bytes(p, pg, elem), red);
}

PatchGeom geometry(const ConvTParams& p, int ks, size_t elem) {
  PatchGeom pg{};
  const int ph_w = static_cast<int>(std::min(p.sw, p.Wout));  // width phases
  pg.rg = row_groups(p);
  pg.ks = ks;
  int64_t lo_h, hi_h, lo_w, hi_w;
  tap_reach(p.ph, p.sh, p.dh, p.KH, std::min(p.sh, p.Hout), lo_h, hi_h);
  tap_reach(p.pw, p.sw, p.dw, p.KW, ph_w, lo_w, hi_w);
  pg.oh0 = static_cast<int>(lo_h);
  pg.ow0 = static_cast<int>(lo_w);
  const int rows = rows_a_thread(p) * pg.rg;  // phase rows a block
  pg.srows = static_cast<int>(rows + hi_h - lo_h);
  pg.tiles_h = static_cast<int>((phase_extent(0, p.sh, p.Hout) + rows - 1) / rows);
  pg.tiles_w = static_cast<int>((phase_extent(0, p.sw, p.Wout) + 31) / 32);
  for (int phase = 0; phase < phases(p); ++phase) {
    PatchPhase& f = pg.ph[phase];
    f.rh = phase / ph_w;
    f.rw = phase % ph_w;
    f.mh = static_cast<int>(phase_extent(f.rh, p.sh, p.Hout));
    f.mw = static_cast<int>(phase_extent(f.rw, p.sw, p.Wout));
    const PhaseTaps th = phase_taps(f.rh, p.ph, p.sh, p.dh, p.KH);
    const PhaseTaps tw = phase_taps(f.rw, p.pw, p.sw, p.dw, p.KW);
    if (th.k0 >= p.KH || tw.k0 >= p.KW) continue;  // a pure fill
    f.nth = static_cast<int>(phase_tap_count(th, p.KH));
    f.ntw = static_cast<int>(phase_tap_count(tw, p.KW));
    // Height dilation 1: a phase's height taps read consecutive rows, the last tap's first. Tap i of the
    // window (counted from the last) is kernel row k0 + (nth - 1 - i) * step.
    const int64_t off_h = tap_offset(f.rh, p.ph, p.sh, p.dh, th.k0) - (f.nth - 1);
    const int64_t off_w = tap_offset(f.rw, p.pw, p.sw, p.dw, tw.k0);
    f.win = static_cast<int>((off_h - lo_h) * kPitch + off_w - lo_w);  // + shift, set with vec at launch
    f.w_tap0 = static_cast<int>((th.k0 + (f.nth - 1) * th.step) * p.KW + tw.k0);
    f.w_h = -static_cast<int>(th.step * p.KW);
    f.w_step = static_cast<int>(tw.step);
    f.dbw = static_cast<int>(tw.step * p.dw / p.sw);
  }
  // 16 channels a chunk (fsrcnn-56-1-n1 at 8 rows a thread: 0.068-0.071 ms against 0.078-0.079 with 8, 0.071-0.083 with 4),
  // fewer where a stage buffer passes its budget.
  pg.cc = static_cast<int>(std::min<int64_t>(p.Cin_g, 16));
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
  allow_dynamic_smem(kernel, static_cast<int>(smem));
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
  if (hi_h - lo_h > kMaxReachH || hi_w - lo_w > kMaxReachW || std::abs(lo_h) >= lim || std::abs(lo_w) >= lim) return false;
  // One channel a chunk must fit the shared memory a block can have (double, no split).
  const PatchGeom pg = geometry(p, 1, sizeof(double));
  return smem_bytes(p, pg, sizeof(double)) <= kSmemCap && blocks(p, pg) < (int64_t(1) << 31);
}

// The least split that gives the grid 16 warps an SM, as far as 4 input channels a warp and the block's warp
// limit (max_warps) allow: the split trades a block's sum in shared memory for warps that hide each other's latency
// (fsrcnn-56-1-n1: 128 blocks of 9 warps with 16 rows a thread; dcgan-64-3-n64: 128 blocks of 8).
int patch_auto_split(const ConvTParams& p, size_t acc_bytes, int device) {
  const int sms = sm_count(device);
  const int64_t cap = int64_t(sms) * 16;
  const int64_t warps = blocks(p, geometry(p, 1, sizeof(float))) * phases(p) * row_groups(p);
  int split = 1;
  while (warps * split < cap && split < 4 && p.Cin_g >= 8 * split &&
         phases(p) * row_groups(p) * split * 2 <= max_warps(p, acc_bytes))
    split *= 2;
  return split;
}

void launch_patch(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                  int split, cudaStream_t stream) {
  TORCH_CHECK(patch_supports(p), "convt: the patch kernel does not take this problem");
  const size_t acc_bytes = c10::elementSize(at::toOpMathType(x.scalar_type()));
  if (split == 0) split = patch_auto_split(p, acc_bytes, x.get_device());
  // A forced split past the block's warp limit comes down to what fits.
  while (split > 1 && phases(p) * row_groups(p) * split > max_warps(p, acc_bytes)) split /= 2;
  TORCH_CHECK(split == 1 || split == 2 || split == 4, "convt: the patch kernel splits over 1, 2 or 4 warps, not ", split);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "convt_patch", [&] {
    constexpr size_t elem = sizeof(at::opmath_type<scalar_t>);
    PatchGeom pg = geometry(p, split, elem);
    while (pg.ks > 1 && smem_bytes(p, pg, elem) > kSmemCap) pg = geometry(p, pg.ks / 2, elem);
    // 16-byte staging copies where the staged type is the tensor's and every input row starts 16-byte aligned.
    const int vec = static_cast<int>(16 / elem);
    if (sizeof(scalar_t) == elem && (p.Win * int64_t(elem)) % 16 == 0 &&
        reinterpret_cast<uintptr_t>(x.const_data_ptr()) % 16 == 0) {
      pg.vec = vec;
      pg.shift = ((pg.ow0 % vec) + vec) % vec;
      for (PatchPhase& f : pg.ph) f.win += pg.shift;
    } else {
      pg.vec = 1;
      pg.shift = 0;
    }
    if (p.Cout_g == 1) {
      launch_taps<scalar_t, 1>(p, x, w, b, out, pg, stream);
    } else if (p.Cout_g == 2) {
      launch_taps<scalar_t, 2>(p, x, w, b, out, pg, stream);
    } else if (p.Cout_g == 3) {
      launch_taps<scalar_t, 3>(p, x, w, b, out, pg, stream);
    } else {
      launch_taps<scalar_t, 4>(p, x, w, b, out, pg, stream);
    }
  });
}

}  // namespace convt
