// The path for strided problems with a short reduction per output (kb75,
// kb81: 32 multiply-adds an output, 0.8 GB of fp32 output): their time is the
// output's bytes. The phase kernels write each phase on its own, every sw-th
// element of a row, so a warp's stores touch sw times the sectors they fill
// (kb81 1.72 ms against a 0.29 ms floor, kb75 1.52 against 0.29). Here a block
// owns CO_T channels of one image at a time, a row at a time: per row segment it
// computes every width phase into shared memory (each warp mostly inside one
// phase, so its tap list is uniform and its input loads coalesce), then writes
// the segment with 16-byte stores. The staging row is shifted by the global
// row's misalignment so that aligned vectors in memory are aligned in shared
// memory too. Rows of a height phase with no taps are bias or zero, written
// straight out. Blocks are persistent (below), each walking an even share of
// the rows; a block stages a channel tile's weights once for all its rows of
// that tile. The products run on tensor cores (mma.sync) in TF32 and half types,
// on FFMA in strict fp32 and double.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAException.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../convt_params.h"
#include "convt_strip.h"
#include "smem_attr.h"

namespace convt {
namespace {

#include "cp_async.cuh"
#include "fast_div.cuh"
#include "mma_sync.cuh"

constexpr int kThreads = 256, kWarps = kThreads / 32;
constexpr int kMaxPhasesW = 64;
constexpr int kColBytes = 2048;                 // a staged row segment a channel, at most
constexpr int64_t kMaxWeightBytes = 64 * 1024;  // the block's weights, staged as acc_t
constexpr int kStageBatch = 4;                  // staged columns a lane loads before storing, per row
constexpr int64_t kStreamBytes = 64 << 20;      // outputs past this bypass L2 (H100: 50 MB)

struct StripShape {
  int tw;     // columns a segment: a multiple of sw, so a segment starts at width phase 0
  int pitch;  // staged row pitch in elements: room for a shift of up to VEC - 1, a multiple of VEC
  int col_tiles;
  int64_t co_tiles;
  int64_t rows;  // the rows the blocks walk: (image, group, channel tile, output row)
  int off_min;  // the lowest width offset any tap has: a segment's staged input starts there
  int ncols;    // staged input columns a channel and height tap
  int xpitch;   // their pitch: ncols, or on tensor cores 8 past a multiple of 32 (conflict-free A fragments)
  int cip;      // staged channel rows a height tap: the group's, or on tensor cores padded to 8 (zero rows)
  int nth;      // height taps a row can have
  int ks_max;   // MMA: k-steps a (height phase, width phase) can have, the stride of its k-step table
  int mt2;      // MMA: a warp's task is two m-tiles (else one)
  int stage;    // StageMode; with kStageCp16 a segment's staged columns start 16-byte aligned, ncols rounded to 16 bytes
  int64_t w_bytes, o_bytes, x_bytes, t_bytes;  // staged weights, output rows, input, k-step table; 16-byte aligned
  FastDiv per_row, per_tap;  // cp.async staging: a staged row's pieces (16 or 4 bytes), the group's input channels
};

constexpr int64_t align16(int64_t v) { return (v + 15) / 16 * 16; }

// Sixteen bytes of one value repeated, built in registers (a local array went to the stack).
template <typename scalar_t>
__device__ __forceinline__ uint4 splat16(scalar_t v) {
  if constexpr (sizeof(scalar_t) == 2) {
    uint16_t h;
    memcpy(&h, &v, 2);
    const uint32_t u = h | uint32_t(h) << 16;
    return make_uint4(u, u, u, u);
  } else if constexpr (sizeof(scalar_t) == 4) {
    uint32_t u;
    memcpy(&u, &v, 4);
    return make_uint4(u, u, u, u);
  } else {
    uint2 d;
    memcpy(&d, &v, 8);
    return make_uint4(d.x, d.y, d.x, d.y);
  }
}

template <bool STREAM>
__device__ __forceinline__ void store16(void* dst, uint4 v) {
  if constexpr (STREAM) {
    __stcs(reinterpret_cast<uint4*>(dst), v);
  } else {
    *reinterpret_cast<uint4*>(dst) = v;
  }
}

// A weight row of CO_T channels from shared memory in 16-byte loads.
template <typename acc_t, int CO_T>
__device__ __forceinline__ void load_weights(const acc_t* w_t, acc_t (&wv)[CO_T]) {
  if constexpr (sizeof(acc_t) == 4 && CO_T % 4 == 0) {
#pragma unroll
    for (int k = 0; k < CO_T / 4; ++k) {
      const float4 v = reinterpret_cast<const float4*>(w_t)[k];
      wv[4 * k] = v.x, wv[4 * k + 1] = v.y, wv[4 * k + 2] = v.z, wv[4 * k + 3] = v.w;
    }
  } else if constexpr (sizeof(acc_t) == 8 && CO_T % 2 == 0) {
#pragma unroll
    for (int k = 0; k < CO_T / 2; ++k) {
      const double2 v = reinterpret_cast<const double2*>(w_t)[k];
      wv[2 * k] = v.x, wv[2 * k + 1] = v.y;
    }
  } else {
#pragma unroll
    for (int c = 0; c < CO_T; ++c) wv[c] = w_t[c];
  }
}

// Columns a thread: with 16 or fewer channels a thread (the tile split over two warps) four columns share each
// weight load, so a multiply-add costs ~1.2 instructions (two columns at kb75's 8 channels a thread: ~1.5).
constexpr int cols_for(int co_tile) { return co_tile >= 32 ? 2 : 4; }

// How a segment's input is staged. By cp.async into two buffers, a segment's input in flight while the one before
// computes (v22a: kb75's synchronous staging, its loads waited on at the barrier, held 29% of the stall samples):
// 16-byte copies where every image row is 16-byte aligned (v23: a 4-byte copy an element was ~25% of kb81's
// instructions), else 4-byte ones for 4-byte types; else (2-byte types on unaligned rows) loads and stores.
enum StageMode : int { kStageLoads = 0, kStageCp4 = 1, kStageCp16 = 2 };

// A block's place in its walk over (image, group, channel tile, output row), advanced a row at a time without
// division (v22a: the per-row 64-bit divisions and phase_taps were ~20% of kb81's instructions).
struct RowPos {
  int64_t n, g, ct, oh, mh;  // mh = oh / sh
  int rh;                    // oh % sh
};

__device__ __forceinline__ void advance(RowPos& q, const ConvTParams& p, int64_t co_tiles) {
  if (++q.rh == p.sh) q.rh = 0, ++q.mh;
  if (++q.oh < p.Hout) return;
  q.oh = q.mh = 0, q.rh = 0;
  if (++q.ct < co_tiles) return;
  q.ct = 0;
  if (++q.g == p.groups) q.g = 0, ++q.n;
}

// Flat staging index e of the cp.async path as (height tap, channel, piece): stage_input's copies and round_staged's
// rounding walk the same map, so a thread rounds exactly the pieces it copied (its own cp.async writes, visible after
// its wait). n is the pieces a staged row.
struct StagedPiece {
  int hi, ci, j;
};
__device__ __forceinline__ StagedPiece staged_piece(const StripShape& s, int cin_g, int n, int e) {
  const int sr = static_cast<int>(s.per_row.div(e)), hi = static_cast<int>(s.per_tap.div(sr));
  return {hi, sr - hi * cin_g, e - sr * n};
}

// One segment's input, [height tap][cip][xpitch] from column iw_lo (16-byte aligned with kStageCp16), zero
// outside the image, so the taps need no bounds tests. By cp.async the block's threads take every (staged row,
// piece) in turn; on the load path a warp takes a staged row (two at a time), its lanes along the columns.
template <typename scalar_t>
__device__ __forceinline__ void stage_input(const ConvTParams& p, const StripShape& s, const scalar_t* x_n,
                                            int64_t ih0, int64_t dih, int nth, int64_t iw_lo, scalar_t* x_s) {
  constexpr int VEC = 16 / sizeof(scalar_t);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, cin_g = static_cast<int>(p.Cin_g);
  const int64_t HWin = p.Hin * p.Win;
  const int nrows = nth * cin_g;
  if (s.stage != kStageLoads) {
    // The block's threads over every (staged row, piece) at once (v51c: a warp a row left kb81's 17 pieces a row on
    // 17 lanes, and its per-row setup was ~90 instructions a row, 19% of kb81's). A group's input of an image is under
    // 2^31 elements (strip_supports), so rows are 32-bit offsets from x_n.
    const int iw0 = static_cast<int>(iw_lo), win = static_cast<int>(p.Win), hin = static_cast<int>(p.Hin);
    const int hwin = static_cast<int>(HWin), ih0_i = static_cast<int>(ih0), dih_i = static_cast<int>(dih);
    const bool wide = s.stage == kStageCp16;
    const int step = wide ? VEC : 1, n = wide ? s.ncols / VEC : s.ncols;
    for (int e = threadIdx.x; e < nrows * n; e += kThreads) {
      const auto [hi, ci, j] = staged_piece(s, cin_g, n, e);
      const int ih = ih0_i - hi * dih_i, iw = iw0 + j * step;
      // A 16-byte piece starts at a multiple of VEC and Win is one, so it is wholly inside the row or outside.
      const bool ok = ih >= 0 && ih < hin && iw >= 0 && iw < win;
      const scalar_t* src = x_n + (ok ? ci * hwin + ih * win + iw : 0);
      scalar_t* dst = x_s + (hi * s.cip + ci) * s.xpitch + j * step;
      if (wide) {
        cp_async16_zfill(dst, src, ok);
      } else if constexpr (sizeof(scalar_t) == 4) {
        cp_async4_zfill(dst, src, ok);
      }
    }
  } else {
    // up to 2 x kStageBatch loads in flight before their stores
    for (int r0 = warp; r0 < nrows; r0 += 2 * kWarps) {
      const scalar_t* srow[2];
      scalar_t* drow[2];
      bool row_ok[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int sr = r0 + h * kWarps, hi = sr / cin_g, ci = sr - hi * cin_g;
        const int64_t ih = ih0 - hi * dih;
        row_ok[h] = sr < nrows && ih >= 0 && ih < p.Hin;
        srow[h] = x_n + ci * HWin + (row_ok[h] ? ih : 0) * p.Win;
        drow[h] = x_s + (hi * s.cip + ci) * s.xpitch;
      }
      for (int c0 = lane; c0 < s.ncols; c0 += 32 * kStageBatch) {
        scalar_t v[2][kStageBatch];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
#pragma unroll
          for (int u = 0; u < kStageBatch; ++u) {
            const int col = c0 + 32 * u;
            const int64_t iw = iw_lo + col;
            v[h][u] = row_ok[h] && col < s.ncols && iw >= 0 && iw < p.Win ? __ldg(srow[h] + iw)
                                                                        : static_cast<scalar_t>(0);
          }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int sr = r0 + h * kWarps;
#pragma unroll
          for (int u = 0; u < kStageBatch; ++u) {
            const int col = c0 + 32 * u;
            if (sr < nrows && col < s.ncols) drow[h][col] = v[h][u];
          }
        }
      }
    }
  }
}

// TF32: the copies this thread made of a segment's input, rounded in place once (v51), found by staged_piece as
// stage_input found them; the barrier that follows publishes the rounded values. Rounding at each fragment load cost
// two instructions an element at ~5 reads an element (kb75: 16 M of 247 M).
__device__ __forceinline__ void round_staged(const StripShape& s, int cin_g, int nth, float* x_s) {
  const bool wide = s.stage == kStageCp16;
  const int n = wide ? s.ncols / 4 : s.ncols;
  for (int e = threadIdx.x; e < nth * cin_g * n; e += kThreads) {
    const auto [hi, ci, j] = staged_piece(s, cin_g, n, e);
    float* drow = x_s + (hi * s.cip + ci) * s.xpitch;
    if (wide) {
      float4* v = reinterpret_cast<float4*>(drow) + j;
      const float4 f = *v;
      *v = make_float4(__uint_as_float(tf32_round(f.x)), __uint_as_float(tf32_round(f.y)),
                       __uint_as_float(tf32_round(f.z)), __uint_as_float(tf32_round(f.w)));
    } else {
      drow[j] = __uint_as_float(tf32_round(drow[j]));
    }
  }
}

// B registers a lane of an MMA k-step (2 TF32, 1 half type); 1 where there is no MMA (double has no MmaK8).
template <typename scalar_t, bool MMA>
constexpr int b_words() {
  if constexpr (MMA) return MmaK8<scalar_t>::kBWords;
  else return 1;
}

// Blocks an SM the registers must allow: two (at three, 80 registers a thread, the four-column tiles spill;
// uncapped, v11 took 155 registers at 32 channels: one block).
//
// Persistent: the grid is what fits on the device at once, and each block walks an even share of the
// problem's output rows, ordered (image, group, channel tile, row), so it stages a tile's weights once
// for all the rows it owns of that tile rather than once every 8 rows (v11: 21 M of kb81's 334 M
// instructions were that staging), and the share evens out to a row instead of a tile of eight.
//
// MMA: the products on tensor cores (TF32, fp16, bf16; v23), else FFMA. A warp's task is then 16 columns of one
// tapped width phase against 8 or 16 channels: the GEMM's M the phase's columns (A from the staged rows, a tap a
// shift of them), N the channels, K a tap's input channels 8 at a time; the weights are staged once a channel tile
// as B fragments, TF32-rounded. FFMA's ~1.2 instructions a multiply-add were ~40% of kb81's instructions (v22b).
template <typename scalar_t, typename acc_t, int CO_T, bool STREAM, bool MMA>
__global__ void __launch_bounds__(kThreads, sizeof(acc_t) == 4 ? 2 : 1)
    convt_strip_kernel(const ConvTParams p, const StripShape s, const scalar_t* __restrict__ x,
                       const scalar_t* __restrict__ w, const scalar_t* __restrict__ bias, scalar_t* __restrict__ y) {
  constexpr int VEC = 16 / sizeof(scalar_t);
  constexpr int SPLIT = CO_T >= 8 ? 2 : 1, CH = CO_T / SPLIT;  // channel parts, channels a thread
  constexpr int COLS = cols_for(CO_T);
  const bool async = s.stage != kStageLoads;
  extern __shared__ __align__(16) unsigned char smem[];
  acc_t* w_s = reinterpret_cast<acc_t*>(smem);                               // [tap][ci][CO_T]
  uint32_t* w_f = reinterpret_cast<uint32_t*>(smem);  // MMA: [tap][cip / 8][n-tile][lane][B words]
  scalar_t* o_s = reinterpret_cast<scalar_t*>(smem + s.w_bytes);               // [CO_T][pitch]
  scalar_t* x_buf = reinterpret_cast<scalar_t*>(smem + s.w_bytes + s.o_bytes);  // async ? 2 : 1 x [tap][cip][xpitch]
  // MMA: per (height phase, width phase) its k-steps' A and B byte offsets, [sh][sw][ks_max] (v51)
  int4* ks_tab = reinterpret_cast<int4*>(smem + s.w_bytes + s.o_bytes + (async ? 2 : 1) * s.x_bytes);
  // Width phases: first tap and offset, and the phases with taps and without (a warp's work is taken
  // from the tapped ones only, so no warp of the block idles through a pure-fill phase's columns);
  // height phases: first tap, its row offset and the number of taps.
  __shared__ int k0w[kMaxPhasesW], off0w[kMaxPhasesW], tapped[kMaxPhasesW], filled[kMaxPhasesW], n_tapped;
  __shared__ int k0h[kMaxPhasesW], off0h[kMaxPhasesW], nthh[kMaxPhasesW], ntw_s[kMaxPhasesW];
  __shared__ acc_t b_s[CO_T];

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int KK = static_cast<int>(p.KH * p.KW), cin_g = static_cast<int>(p.Cin_g);
  const int phases_w = static_cast<int>(p.sw);
  for (int r = tid; r < phases_w; r += kThreads) {
    const PhaseTaps t = phase_taps(r, p.pw, p.sw, p.dw, p.KW);
    k0w[r] = static_cast<int>(t.k0);
    off0w[r] = t.k0 < p.KW ? static_cast<int>(tap_offset(r, p.pw, p.sw, p.dw, t.k0)) : 0;
    ntw_s[r] = static_cast<int>(phase_tap_count(t, p.KW));
  }
  for (int r = tid; r < p.sh; r += kThreads) {
    const PhaseTaps t = phase_taps(r, p.ph, p.sh, p.dh, p.KH);
    k0h[r] = static_cast<int>(t.k0);
    off0h[r] = t.k0 < p.KH ? static_cast<int>(tap_offset(r, p.ph, p.sh, p.dh, t.k0)) : 0;
    nthh[r] = static_cast<int>(phase_tap_count(t, p.KH));
  }
  __syncthreads();
  if (tid == 0) {
    int nt = 0, nf = 0;
    for (int r = 0; r < phases_w; ++r) {
      if (k0w[r] < p.KW) tapped[nt++] = r;
      else filled[nf++] = r;
    }
    n_tapped = nt;
  }
  __syncthreads();
  // Every phase has the same tap step along an axis; width tap k0 + i*step reads column mw + off0 - i*diw,
  // height tap k0 + i*step row mh + off0 - i*dih.
  const int stepw = static_cast<int>(phase_taps(0, p.pw, p.sw, p.dw, p.KW).step);
  const int diw = static_cast<int>(stepw * p.dw / p.sw);
  const int steph = static_cast<int>(phase_taps(0, p.ph, p.sh, p.dh, p.KH).step);
  const int64_t dih = steph * p.dh / p.sh;
  const int64_t HWin = p.Hin * p.Win, plane = p.Hout * p.Wout;
  const int mt = s.tw / phases_w, mtq = (mt + COLS - 1) / COLS;
  // MMA: NP8 n-tiles of 8 channels (CO_T 4 pads to one), NT of them a task.
  constexpr int NP8 = (CO_T + 7) / 8, NT = NP8 >= 2 ? 2 : 1, NG = NP8 / NT;
  constexpr int BW = b_words<scalar_t, MMA>();
  // A channel's row misalignment (in elements from a 16-byte boundary) steps by the plane's each channel.
  const int plane_mis = static_cast<int>(plane & (VEC - 1));
  const int64_t x_elems = int64_t(s.x_bytes) / static_cast<int64_t>(sizeof(scalar_t));
  // MMA: a task's k-steps, each (height tap, width tap, 8 input channels), as byte offsets from the task's first A
  // element (the phase's first width offset included; the fragment's rows t and t + 4 each) and from the lane's B
  // fragments: one 16-byte load a k-step in place of v23c's counters (~14 instructions a k-step at kb75's one or two
  // k-steps a width tap).
  if constexpr (MMA) {
    const int ksteps = s.cip / 8, per_rh = phases_w * s.ks_max, tap_words = ksteps * NP8 * 32 * BW;
    for (int e = tid; e < static_cast<int>(p.sh) * per_rh; e += kThreads) {
      const int rh = e / per_rh, rw = e / s.ks_max % phases_w, k = e % s.ks_max;
      const int kk = k % ksteps, ntw = ntw_s[rw], kwi = ntw > 0 ? k / ksteps % ntw : 0;
      const int hi = ntw > 0 ? k / (ksteps * ntw) : 0;
      int4 o = make_int4(0, 0, 0, 0);
      if (ntw > 0 && hi < nthh[rh]) {
        const int xo = hi * s.cip * s.xpitch + off0w[rw] - kwi * diw + kk * 8 * s.xpitch;
        o.x = xo * static_cast<int>(sizeof(scalar_t));
        o.y = (xo + (BW == 2 ? 4 : 1) * s.xpitch) * static_cast<int>(sizeof(scalar_t));
        o.z = (((k0h[rh] + hi * steph) * static_cast<int>(p.KW) + k0w[rw] + kwi * stepw) * tap_words +
               kk * NP8 * 32 * BW) * 4;
      }
      ks_tab[e] = o;
    }
    // The padded channel rows (the group's channels up to a multiple of 8) read as zero in every staged buffer.
    const int pad = s.cip - cin_g, per_buf = s.nth * pad * s.xpitch;
    for (int e = tid; e < (async ? 2 : 1) * per_buf; e += kThreads) {
      const int b = e / per_buf, r = e - b * per_buf, row = r / s.xpitch, hi = row / pad;
      x_buf[b * x_elems + (hi * s.cip + cin_g + row - hi * pad) * s.xpitch + (r - row * s.xpitch)] =
          static_cast<scalar_t>(0);
    }
  }
  auto x_of = [&](const RowPos& q) { return x + (q.n * p.Cin + q.g * p.Cin_g) * HWin; };
  auto stage = [&](const RowPos& q, int tile, scalar_t* buf) {
    const int64_t iw_lo = int64_t(tile) * mt + s.off_min;
    stage_input<scalar_t>(p, s, x_of(q), q.mh + off0h[q.rh], dih, nthh[q.rh],
                          s.stage == kStageCp16 ? iw_lo & ~int64_t(VEC - 1) : iw_lo, buf);
  };

  const int64_t r_begin = s.rows * blockIdx.x / gridDim.x, r_end = s.rows * (blockIdx.x + 1) / gridDim.x;
  RowPos q;
  {
    const int64_t key = r_begin / p.Hout, gn = key / s.co_tiles;
    q.oh = r_begin - key * p.Hout, q.ct = key - gn * s.co_tiles, q.g = gn % p.groups, q.n = gn / p.groups;
    q.mh = q.oh / p.sh, q.rh = static_cast<int>(q.oh - q.mh * p.sh);
  }
  // The next tapped (row, segment) after (q at row r, tile): its input is staged while (q, tile) computes.
  auto next_tapped = [&](RowPos& a, int64_t& ra, int& ta) {
    if (++ta < s.col_tiles) return;
    ta = 0;
    do {
      advance(a, p, s.co_tiles);
      ++ra;
    } while (ra < r_end && nthh[a.rh] == 0);
  };
  int cur = 0;  // the x buffer holding the segment being computed
  if (async) {
    RowPos a = q;
    int64_t ra = r_begin;
    int ta = 0;
    if (nthh[a.rh] == 0) {
      ta = s.col_tiles - 1;
      next_tapped(a, ra, ta);
    }
    if (ra < r_end) stage(a, ta, x_buf);
    cp_async_commit();
  }
  int64_t staged = -1;  // (group, channel tile) whose weights are in w_s
  for (int64_t r = r_begin; r < r_end; ++r, advance(q, p, s.co_tiles)) {
    const int64_t co0 = q.ct * CO_T;
    const int co_n = static_cast<int>(p.Cout_g - co0 < CO_T ? p.Cout_g - co0 : CO_T);
    if (q.g * s.co_tiles + q.ct != staged) {
      // The last row's stores still read b_s.
      if (staged >= 0) __syncthreads();
      staged = q.g * s.co_tiles + q.ct;
      // Weights: the tile's co_n * KK values of an input channel are contiguous in memory, so read them in
      // that order (coalesced) and scatter to [tap][ci][c]; channels past the group's end stay zero.
      const scalar_t* w_g = w + (q.g * p.Cin_g * p.Cout_g + co0) * KK;
      if constexpr (MMA) {
        // B fragments: lane l holds column (channel) l / 4 of its n-tile, rows (channels in) l % 4 and + 4
        // (TF32) or 2 (l % 4) and + 1 (half types); zero past the group's channels either way.
        const int words = KK * (s.cip / 8) * NP8 * 32 * BW;
        for (int e = tid; e < words; e += kThreads) {
          const int r = e % BW, l = e / BW % 32, nt = e / (BW * 32) % NP8, kt = e / (BW * 32 * NP8);
          const int tap = kt / (s.cip / 8), c = nt * 8 + l / 4;
          const int ci0 = (kt - tap * (s.cip / 8)) * 8 + (BW == 2 ? l % 4 + 4 * r : 2 * (l % 4));
          auto wv = [&](int ci) {
            return ci < cin_g && c < co_n ? w_g[(ci * p.Cout_g + c) * KK + tap] : static_cast<scalar_t>(0);
          };
          if constexpr (BW == 2) {
            w_f[e] = tf32_round(static_cast<float>(wv(ci0)));
          } else {
            w_f[e] = uint32_t(wv(ci0).x) | uint32_t(wv(ci0 + 1).x) << 16;
          }
        }
      } else {
        const int per_ci = co_n * KK;
        for (int e = tid; e < cin_g * per_ci; e += kThreads) {
          const int ci = e / per_ci, rr = e - ci * per_ci, c = rr / KK, tap = rr - c * KK;
          w_s[(tap * cin_g + ci) * CO_T + c] = static_cast<acc_t>(w_g[ci * p.Cout_g * KK + rr]);
        }
        for (int e = tid; e < KK * cin_g * (CO_T - co_n); e += kThreads) {
          const int c = co_n + e % (CO_T - co_n), row = e / (CO_T - co_n);
          w_s[row * CO_T + c] = acc_t(0);
        }
      }
      if (tid < CO_T)
        b_s[tid] = bias != nullptr && tid < co_n ? static_cast<acc_t>(bias[q.g * p.Cout_g + co0 + tid]) : acc_t(0);
      __syncthreads();
    }
    scalar_t* y_n = y + (q.n * p.Cout + q.g * p.Cout_g + co0) * plane;
    const int nth = nthh[q.rh], k0h_r = k0h[q.rh];
    const bool fill = nth == 0;
    for (int tile = 0; tile < s.col_tiles; ++tile) {
      const int64_t ow0 = int64_t(tile) * s.tw;
      const int len = static_cast<int>(std::min<int64_t>(s.tw, p.Wout - ow0));
      scalar_t* dst0 = y_n + q.oh * p.Wout + ow0;
      const int mis0 = static_cast<int>((reinterpret_cast<uintptr_t>(dst0) / sizeof(scalar_t)) & (VEC - 1));
      if (!fill) {
        // With 16-byte staging the segment's first column sits `shift` elements into its staged rows.
        const int shift = s.stage == kStageCp16 ? static_cast<int>((int64_t(tile) * mt + s.off_min) & (VEC - 1)) : 0;
        const scalar_t* x_s = x_buf + cur * x_elems + shift;
        if (async) {
          // The other buffer was last read before the previous segment's second barrier.
          RowPos a = q;
          int64_t ra = r;
          int ta = tile;
          next_tapped(a, ra, ta);
          if (ra < r_end) stage(a, ta, x_buf + (cur ^ 1) * x_elems);
          cp_async_commit();
          cp_async_wait<1>();
          if constexpr (MMA && sizeof(scalar_t) == 4)
            round_staged(s, cin_g, nthh[q.rh], reinterpret_cast<float*>(x_buf + cur * x_elems));
        } else {
          stage(q, tile, x_buf);
        }
        __syncthreads();
        // Pure-fill width phases of this tapped row: bias (or zero) at their columns (after the
        // barrier: the last segment's stores read o_s up to it).
        const int n_filled = phases_w - n_tapped;
        for (int e = tid; e < n_filled * mt; e += kThreads) {
          const int f = e / mt, t = e - f * mt, j = filled[f] + t * phases_w;
          if (j >= len) continue;
#pragma unroll
          for (int cc = 0; cc < CO_T; ++cc)
            o_s[cc * s.pitch + ((mis0 + cc * plane_mis) & (VEC - 1)) + j] = static_cast<scalar_t>(b_s[cc]);
        }
        if constexpr (MMA) {
          // A lane's A elements: columns g and g + 8 of the task's 16, channels t and t + 4 (TF32) or 2t and
          // 2t + 1 (half types) of the k-step's 8; its accumulators: channels 2t and 2t + 1 of each n-tile.
          // Taps come from the k-step table (v51), and a warp's tasks by counters (v23a: the tap loops' 64-bit bounds
          // and the task's divisions were ~60% of kb75's compute).
          const int g8 = lane / 4, t4 = lane % 4;
          const int mtiles = (mt + 15) / 16;
          // A warp's n-group is fixed (kWarps is a multiple of NG); its m-tile and phase step by kWarps / NG.
          const int ng = warp % NG;
          const uint32_t* w_lane = w_f + ng * NT * 32 * BW + lane * BW;
          const scalar_t* x_lane = x_s + (BW == 2 ? t4 : 2 * t4) * s.xpitch + g8 - s.off_min;
          const int4* tab_r = ks_tab + q.rh * phases_w * s.ks_max;
          // The lane's output channels a segment: their staged-row offsets and biases (the biases read from
          // shared memory a task instead: kb81 fp16 242 -> 269 us).
          int o_off[NT][2];
          float bias_v[NT][2];
#pragma unroll
          for (int n = 0; n < NT; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int cc = min((ng * NT + n) * 8 + 2 * t4 + e, CO_T - 1);  // CO_T 4: pad channels never stored
              o_off[n][e] = cc * s.pitch + ((mis0 + cc * plane_mis) & (VEC - 1));
              bias_v[n][e] = static_cast<float>(b_s[cc]);
            }
          // A task is MT adjacent m-tiles of one phase (s.mt2: two where that evens the warps' loads no worse),
          // sharing its B loads and its setup (v51: kb75 spent ~115 instructions a task outside its k-steps).
          auto tasks = [&](auto mt_c) {
            constexpr int MT = decltype(mt_c)::value;
            const int units = (mtiles + MT - 1) / MT;
            int pi = 0, unit = warp / NG;
            for (; pi < n_tapped; unit += kWarps / NG) {
              while (unit >= units) unit -= units, ++pi;
              if (pi >= n_tapped) break;
              const int rw = tapped[pi];
              // The accumulators start at the bias: a lane's c0, c1 (and c2, c3) are channels 2t, 2t + 1.
              float acc[MT][NT][4];
#pragma unroll
              for (int m = 0; m < MT; ++m)
#pragma unroll
                for (int n = 0; n < NT; ++n)
#pragma unroll
                  for (int e = 0; e < 4; ++e) acc[m][n][e] = bias_v[n][e % 2];
              const char* xb = reinterpret_cast<const char*>(x_lane + unit * (16 * MT));
              const char* wb = reinterpret_cast<const char*>(w_lane);
              const int4* tab = tab_r + rw * s.ks_max;
              const int nk = nth * ntw_s[rw] * (s.cip / 8);
              // One k-step a pass: A from the staged rows at o.x and o.y (its second k-row: TF32 t + 4, half types
              // 2t + 1; TF32 rounded at staging), 16 columns on for the next m-tile; B fragments at o.z.
#pragma unroll 2
              for (int k = 0; k < nk; ++k) {
                const int4 o = tab[k];
                const scalar_t* xp = reinterpret_cast<const scalar_t*>(xb + o.x);
                const scalar_t* xq = reinterpret_cast<const scalar_t*>(xb + o.y);
                const uint32_t* wp = reinterpret_cast<const uint32_t*>(wb + o.z);
                uint32_t b[NT][BW];
#pragma unroll
                for (int n = 0; n < NT; ++n) {
                  if constexpr (BW == 2) {
                    const uint2 v = *reinterpret_cast<const uint2*>(wp + n * 32 * BW);
                    b[n][0] = v.x, b[n][1] = v.y;
                  } else {
                    b[n][0] = wp[n * 32];
                  }
                }
#pragma unroll
                for (int m = 0; m < MT; ++m) {
                  uint32_t a[4];
                  if constexpr (BW == 2) {
                    a[0] = __float_as_uint(xp[16 * m]);
                    a[1] = __float_as_uint(xp[16 * m + 8]);
                    a[2] = __float_as_uint(xq[16 * m]);
                    a[3] = __float_as_uint(xq[16 * m + 8]);
                  } else {
                    a[0] = uint32_t(xp[16 * m].x) | uint32_t(xq[16 * m].x) << 16;
                    a[1] = uint32_t(xp[16 * m + 8].x) | uint32_t(xq[16 * m + 8].x) << 16;
                  }
#pragma unroll
                  for (int n = 0; n < NT; ++n) MmaK8<scalar_t>::run(acc[m][n], a, b[n]);
                }
              }
              // Columns past the phase's last (a partial m-tile, or a task's second m-tile past the phase's end)
              // computed from slack and dropped here.
#pragma unroll
              for (int m = 0; m < MT; ++m)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                  const int pc = (unit * MT + m) * 16 + g8 + 8 * h, j = rw + pc * phases_w;
                  if (pc >= mt || j >= len) continue;
#pragma unroll
                  for (int n = 0; n < NT; ++n)
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                      if (CO_T % 8 != 0 && (ng * NT + n) * 8 + 2 * t4 + e >= CO_T) continue;
                      o_s[o_off[n][e] + j] = static_cast<scalar_t>(acc[m][n][2 * h + e]);
                    }
                }
            }
          };
          if (s.mt2) {
            tasks(std::integral_constant<int, 2>{});
          } else {
            tasks(std::integral_constant<int, 1>{});
          }
        } else {
          // COLS columns a thread, t + u * mtq of one tapped width phase, so one weight load serves all; and
          // the tile's channels split in SPLIT parts across consecutive warps (numbering the tasks part-major
          // instead put kb75's light one-tap phase twice on one scheduler and its barrier wait rose 20%).
          const int tasks = n_tapped * mtq;
          for (int i = tid; i < (tasks + 31) / 32 * 32 * SPLIT; i += kThreads) {
            const int blk = i / 32, part = blk % SPLIT, qi = blk / SPLIT * 32 + i % 32;
            if (qi >= tasks) continue;
            const int pi = qi / mtq, t = qi - pi * mtq, rw = tapped[pi];
            acc_t acc[COLS][CH];
#pragma unroll
            for (int u = 0; u < COLS; ++u)
#pragma unroll
              for (int c = 0; c < CH; ++c) acc[u][c] = acc_t(0);
            const int k0 = k0w[rw];
            const scalar_t* x_t = x_s + t + off0w[rw] - s.off_min;
            for (int hi = 0; hi < nth; ++hi) {
              const int kh = k0h_r + hi * steph;
              int sw_i = 0;
              for (int kw = k0; kw < p.KW; kw += stepw, ++sw_i) {
                const acc_t* w_t = w_s + (kh * static_cast<int>(p.KW) + kw) * cin_g * CO_T + part * CH;
                const scalar_t* xp = x_t + hi * s.cip * s.xpitch - sw_i * diw;
                // Two input channels a pass: the second's loads issue under the first's multiply-adds.
#pragma unroll 2
                for (int ci = 0; ci < cin_g; ++ci, xp += s.xpitch, w_t += CO_T) {
                  // a column past the phase's last reads past its staged row (never stored): x_s has slack
                  acc_t xv[COLS];
#pragma unroll
                  for (int u = 0; u < COLS; ++u) xv[u] = static_cast<acc_t>(xp[u * mtq]);
                  acc_t wv[CH];
                  load_weights<acc_t, CH>(w_t, wv);
#pragma unroll
                  for (int u = 0; u < COLS; ++u)
#pragma unroll
                    for (int c = 0; c < CH; ++c) acc[u][c] += wv[c] * xv[u];
                }
              }
            }
#pragma unroll
            for (int u = 0; u < COLS; ++u) {
              const int j = rw + (t + u * mtq) * phases_w;
              if (t + u * mtq >= mt || j >= len) continue;
#pragma unroll
              for (int c = 0; c < CH; ++c) {
                const int cc = part * CH + c, mis = (mis0 + cc * plane_mis) & (VEC - 1);
                o_s[cc * s.pitch + mis + j] = static_cast<scalar_t>(acc[u][c] + b_s[cc]);
              }
            }
          }
        }
        __syncthreads();
        if (async) cur ^= 1;
      }
      // Two channels a warp, a half-warp each, its lanes along the row (v23b: a warp a channel spent ~85
      // instructions a channel and segment, half of them its setup and the row's ends, on 3 iterations of
      // stores). Position q of a channel's segment is column q - mis: whole 16-byte vectors k in [k_lo, k_hi)
      // first, then the partial vectors at either end, an element a lane (branching per vector cost ~60
      // instructions a stored vector, ncu v11).
      const int hl = lane % 16;
      for (int c = 2 * warp + lane / 16; c < co_n; c += 2 * kWarps) {
        const int mis = (mis0 + c * plane_mis) & (VEC - 1), end = mis + len;
        const int k_lo = mis > 0 ? 1 : 0, k_hi = end / VEC;
        scalar_t* row = dst0 + c * plane - mis;
        const scalar_t* src = o_s + c * s.pitch;
        const scalar_t fill_v = static_cast<scalar_t>(b_s[c]);
        uint4* dv = reinterpret_cast<uint4*>(row) + k_lo + hl;
        const uint4* const dv_end = reinterpret_cast<uint4*>(row) + k_hi;
        if (fill) {
          const uint4 v = splat16(fill_v);
          for (; dv < dv_end; dv += 16) store16<STREAM>(dv, v);
        } else {
          for (const uint4* sv = reinterpret_cast<const uint4*>(src) + k_lo + hl; dv < dv_end; dv += 16, sv += 16)
            store16<STREAM>(dv, *sv);
        }
        // lanes 0..VEC-1 of the half: the head [mis, VEC) when mis > 0; lanes 8..8+VEC-1: the tail from the
        // last whole vector (or from the head's end) to end
        const int tail = (k_hi > k_lo ? k_hi : k_lo) * VEC;
        const int qq = hl < 8 ? hl : tail + hl - 8;
        const bool ok = hl < 8 ? hl < VEC && mis > 0 && qq >= mis && qq < end : hl - 8 < VEC && qq < end;
        if (ok) row[qq] = fill ? fill_v : src[qq];
      }
      // No barrier here: the next segment writes o_s only after its own staging barrier, and stages its
      // input into the buffer last read before the barrier above.
    }
  }
  if (async) cp_async_wait<0>();  // an empty last group: nothing in flight at exit
}

// The group's channels rounded up to a tile, at most 32: a wider tile restages the input fewer times
// (kb81, 64 channels: 0.58 ms with 32 against 0.72 with 16), a padded one computes zeros (kb75, 16
// channels: 0.82 with 16, 1.21 with 32).
int auto_co_tile(const ConvTParams& p) { return p.Cout_g <= 4 ? 4 : p.Cout_g <= 8 ? 8 : p.Cout_g <= 16 ? 16 : 32; }

int64_t acc_size(at::ScalarType dtype) { return dtype == at::kDouble ? 8 : 4; }

// cols: the most output columns a segment (kColBytes' worth unless launch_strip finds room for more).
StripShape shape_for(const ConvTParams& p, at::ScalarType dtype, int co_tile, bool mma, bool wide, int64_t cols = 0) {
  const int64_t esize = at::elementSize(dtype), vec = 16 / esize;
  StripShape s;
  if (cols <= 0) cols = kColBytes / esize;
  s.col_tiles = static_cast<int>((p.Wout + cols - 1) / cols);
  // Even segments, each a whole number of width phases.
  const int64_t per = (p.Wout + s.col_tiles - 1) / s.col_tiles;
  s.tw = static_cast<int>((per + p.sw - 1) / p.sw * p.sw);
  s.col_tiles = static_cast<int>((p.Wout + s.tw - 1) / s.tw);
  s.pitch = static_cast<int>((s.tw + vec - 1 + vec - 1) / vec * vec);
  s.co_tiles = (p.Cout_g + co_tile - 1) / co_tile;
  s.rows = p.N * p.groups * s.co_tiles * p.Hout;
  s.o_bytes = align16(int64_t(co_tile) * s.pitch * esize);
  // Offsets (phase + pad - k * dil) / stride over every phase and tap lie in [lo, hi].
  auto floor_div = [](int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); };
  const int64_t lo = floor_div(p.pw - (p.KW - 1) * p.dw, p.sw), hi = floor_div(p.sw - 1 + p.pw, p.sw);
  s.off_min = static_cast<int>(lo);
  s.ncols = static_cast<int>(s.tw / p.sw - 1 + hi - lo + 1);
  s.stage = wide ? kStageCp16 : esize == 4 ? kStageCp4 : kStageLoads;
  // 16-byte staging starts a segment's rows at the 16-byte boundary at or below its first column.
  if (wide) s.ncols = static_cast<int>((s.ncols + vec - 1 + vec - 1) / vec * vec);
  // A fragment's 4 k-rows x 8 columns land in 32 banks when the row pitch is 8 past a multiple of 32 words
  // (TF32: rows t, t + 4; half types: rows 2t, 2t + 1, pairs of columns a word).
  s.xpitch = mma ? s.ncols + ((8 - s.ncols) % 32 + 32) % 32 : s.ncols;
  s.cip = static_cast<int>(mma ? (p.Cin_g + 7) / 8 * 8 : p.Cin_g);
  const int64_t step_h = phase_taps(0, p.ph, p.sh, p.dh, p.KH).step;
  s.nth = static_cast<int>((p.KH + step_h - 1) / step_h);
  const int64_t step_w = phase_taps(0, p.pw, p.sw, p.dw, p.KW).step;
  const int64_t ks_max = mma ? int64_t(s.nth) * ((p.KW + step_w - 1) / step_w) * (s.cip / 8) : 0;
  s.ks_max = static_cast<int>(std::min<int64_t>(ks_max, int64_t(1) << 20));
  s.t_bytes = align16(p.sh * p.sw * ks_max * 16);
  // A thread's last column reads up to (COLS - 1) * mtq + 1 elements past the last staged row (never used).
  const int64_t mtq = (s.tw / p.sw + cols_for(co_tile) - 1) / cols_for(co_tile);
  // A task's last m-tile reads up to 31 past its phase's last column (dropped).
  const int64_t slack = mma ? 32 : int64_t(cols_for(co_tile)) * mtq + 1;
  // Two m-tiles a task where the busiest warp's load (a pair ~1.6 single m-tiles' instructions, v51) is lighter.
  s.mt2 = 0;
  if (mma) {
    int64_t tapped_w = 0;
    for (int64_t r = 0; r < p.sw; ++r) tapped_w += phase_taps(r, p.pw, p.sw, p.dw, p.KW).k0 < p.KW ? 1 : 0;
    const int64_t mtiles = (s.tw / p.sw + 15) / 16, ng = (co_tile + 7) / 8 >= 2 ? (co_tile + 7) / 16 : 1;
    const int64_t one = (tapped_w * mtiles * ng + kWarps - 1) / kWarps;
    const int64_t two = (tapped_w * ((mtiles + 1) / 2) * ng + kWarps - 1) / kWarps;
    s.mt2 = 16 * two < 10 * one ? 1 : 0;
  }
  // MMA: B words, one an element in TF32 and one a pair in half types, over channel tiles padded to 8.
  s.w_bytes = mma ? align16(p.KH * p.KW * s.cip * int64_t((co_tile + 7) / 8 * 8) * esize)
                  : align16(p.KH * p.KW * p.Cin_g * co_tile * acc_size(dtype));
  s.x_bytes = align16((int64_t(s.nth) * s.cip * s.xpitch + slack) * esize);
  s.per_row = FastDiv(static_cast<uint32_t>(std::max<int64_t>(1, wide ? s.ncols / vec : s.ncols)));
  s.per_tap = FastDiv(static_cast<uint32_t>(std::max<int64_t>(1, p.Cin_g)));
  return s;
}

// Two input buffers where staging is by cp.async.
int64_t smem_bytes(const StripShape& s) {
  return s.w_bytes + s.o_bytes + (s.stage != kStageLoads ? 2 : 1) * s.x_bytes + s.t_bytes;
}

// The device's opt-in shared memory a block, less the kernel's static arrays (about 2 KB).
int64_t smem_limit() {
  return int64_t(max_smem_optin(c10::cuda::current_device())) - 3072;
}

// Blocks of the kernel resident on one SM.
int resident_blocks(const void* kernel, int64_t smem, int device) {
  const int blocks = blocks_per_sm(kernel, kThreads, static_cast<size_t>(smem), device);
  TORCH_CHECK(blocks > 0, "convt: the strip kernel does not fit on an SM with ", smem, " bytes of shared memory");
  return blocks;
}

template <typename scalar_t, int CO_T, bool MMA>
void launch(const ConvTParams& p, const StripShape& s, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
            at::Tensor& out, int sms, cudaStream_t stream) {
  using acc_t = at::opmath_type<scalar_t>;
  // Outputs larger than L2 stream past it (evict-first stores: kb81 fp32 0.87 vs 1.01 ms); smaller ones
  // stay for the next layer to read.
  const bool stream_out = out.numel() * out.element_size() > kStreamBytes;
  auto kernel = stream_out ? convt_strip_kernel<scalar_t, acc_t, CO_T, true, MMA>
                           : convt_strip_kernel<scalar_t, acc_t, CO_T, false, MMA>;
  const int64_t smem = smem_bytes(s);
  allow_dynamic_smem(kernel, static_cast<int>(smem));
  const int64_t grid =
      std::min<int64_t>(s.rows, int64_t(sms) * resident_blocks(reinterpret_cast<const void*>(kernel), smem, x.get_device()));
  kernel<<<static_cast<unsigned>(grid), kThreads, static_cast<size_t>(smem), stream>>>(
      p, s, x.const_data_ptr<scalar_t>(), w.const_data_ptr<scalar_t>(),
      b.defined() ? b.const_data_ptr<scalar_t>() : nullptr, out.mutable_data_ptr<scalar_t>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename scalar_t, int CO_T>
void launch_math(const ConvTParams& p, const StripShape& s, const at::Tensor& x, const at::Tensor& w,
                 const at::Tensor& b, at::Tensor& out, bool mma, int sms, cudaStream_t stream) {
  if constexpr (sizeof(scalar_t) != 8) {
    if (mma) return launch<scalar_t, CO_T, true>(p, s, x, w, b, out, sms, stream);
  }
  launch<scalar_t, CO_T, false>(p, s, x, w, b, out, sms, stream);
}

}  // namespace

bool strip_supports(const ConvTParams& p, at::ScalarType dtype, int co_tile, bool mma) {
  if (co_tile == 0) co_tile = auto_co_tile(p);
  if (mma && dtype != at::kFloat && dtype != at::kHalf && dtype != at::kBFloat16) return false;
  // Columns, offsets, channels, phase-table entries and a group's staged input rows are 32-bit.
  constexpr int64_t kInt = int64_t(1) << 30;
  if (p.sw > kMaxPhasesW || p.sh > kMaxPhasesW || p.Wout >= kInt || p.Win >= kInt || p.pw + p.sw + p.KW * p.dw >= kInt ||
      p.ph + p.sh + p.KH * p.dh >= kInt ||
      p.Cin_g * p.KH * p.KW >= kInt || p.Cin_g * p.Hin * p.Win >= 2 * kInt)
    return false;
  const StripShape s = shape_for(p, dtype, co_tile, mma, false);
  if (s.w_bytes > kMaxWeightBytes) return false;
  // rows * gridDim.x in the kernel's even split stays inside int64 below 2^40 rows.
  return s.rows < (int64_t(1) << 40) && smem_bytes(s) <= smem_limit();
}

bool strip_mma_precision(at::ScalarType dtype, bool tf32) {
  return dtype == at::kHalf || dtype == at::kBFloat16 || (dtype == at::kFloat && tf32);
}

bool strip_mma(const ConvTParams& p, at::ScalarType dtype, bool tf32, int co_tile) {
  return strip_mma_precision(dtype, tf32) && strip_supports(p, dtype, co_tile, true);
}

bool strip_preferred(const ConvTParams& p, at::ScalarType dtype) {
  // Taps a phase can have along each axis, times the group's input channels:
  // multiply-adds an output, at most. 64 keeps the arithmetic under the stores'
  // time on an H100 (kb81: 32 an output, 2.4 G in all against 0.8 GB stored).
  const int64_t taps = ((p.KH + p.sh - 1) / p.sh) * ((p.KW + p.sw - 1) / p.sw);
  return p.sh * p.sw > 1 && p.Cin_g * taps <= 64 && strip_supports(p, dtype, 0);
}

void launch_strip(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                  int co_tile, bool mma, cudaStream_t stream) {
  if (co_tile == 0) co_tile = auto_co_tile(p);
  TORCH_CHECK(strip_supports(p, x.scalar_type(), co_tile, mma), "convt: the strip kernel does not take this problem");
  StripShape s = shape_for(p, x.scalar_type(), co_tile, mma, false);
  // 16-byte staging where every image row starts on a 16-byte boundary and that shape fits too.
  const bool wide = p.Win % (16 / x.element_size()) == 0 && reinterpret_cast<uintptr_t>(x.const_data_ptr()) % 16 == 0;
  if (wide) {
    const StripShape t = shape_for(p, x.scalar_type(), co_tile, mma, true);
    if (smem_bytes(t) <= smem_limit()) s = t;
  }
  // Fewer, wider segments where two blocks an SM still fit: a segment's staging, rounding, stores and setup cost
  // about as much at 384 columns as at 766 (v51, kb75: ~45% of its instructions).
  if (x.element_size() <= 4) {
    const int64_t budget = int64_t(device_attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, x.get_device())) / 2 - 4096;
    for (int64_t ct = 1; ct < s.col_tiles; ++ct) {
      const StripShape t = shape_for(p, x.scalar_type(), co_tile, mma, s.stage == kStageCp16, (p.Wout + ct - 1) / ct);
      if (smem_bytes(t) <= budget) {
        s = t;
        break;
      }
    }
  }
  const int sms = sm_count(x.get_device());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "convt_strip", [&] {
    switch (co_tile) {
      case 4: launch_math<scalar_t, 4>(p, s, x, w, b, out, mma, sms, stream); break;
      case 8: launch_math<scalar_t, 8>(p, s, x, w, b, out, mma, sms, stream); break;
      case 32: launch_math<scalar_t, 32>(p, s, x, w, b, out, mma, sms, stream); break;
      default: launch_math<scalar_t, 16>(p, s, x, w, b, out, mma, sms, stream);
    }
  });
}

}  // namespace convt
