// The FFMA path for strided problems with a short reduction per output (kb75,
// kb81: 32 multiply-adds an output, 0.8 GB of fp32 output): their time is the
// output's bytes. The phase kernels write each phase on its own, every sw-th
// element of a row, so a warp's stores touch sw times the sectors they fill
// (kb81 1.72 ms against a 0.29 ms floor, kb75 1.52 against 0.29). Here a block
// owns CO_T channels of one image over a few output rows: per row segment it
// computes every width phase into shared memory (each warp mostly inside one
// phase, so its tap list is uniform and its input loads coalesce), then writes
// the segment with 16-byte stores. The staging row is shifted by the global
// row's misalignment so that aligned vectors in memory are aligned in shared
// memory too. Rows of a height phase with no taps are bias or zero, written
// straight out. The block's weights are staged once and serve all its rows.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAException.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "../convt_params.h"
#include "convt_strip.h"
#include "smem_attr.h"

namespace convt {
namespace {

constexpr int kThreads = 256, kWarps = kThreads / 32;
constexpr int kMaxPhasesW = 64;
constexpr int kColBytes = 2048;                 // a staged row segment a channel, at most
constexpr int64_t kMaxWeightBytes = 64 * 1024;  // the block's weights, staged as acc_t
constexpr int kMaxRows = 8;                     // output rows a block walks
constexpr int kStageBatch = 4;                  // staged columns a lane loads before storing, per row
constexpr int64_t kStreamBytes = 64 << 20;      // outputs past this bypass L2 (H100: 50 MB)

struct StripShape {
  int tw;     // columns a segment: a multiple of sw, so a segment starts at width phase 0
  int pitch;  // staged row pitch in elements: room for a shift of up to VEC - 1, a multiple of VEC
  int col_tiles, rows;
  int64_t row_tiles, co_tiles, blocks;
  int off_min;  // the lowest width offset any tap has: a segment's staged input starts there
  int ncols;    // staged input columns a channel and height tap
  int nth;      // height taps a row can have
  int64_t w_bytes, o_bytes, x_bytes;  // staged weights, output rows, input; 16-byte aligned sizes
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

// Blocks an SM the registers must allow: three at 16 channels (the shared memory allows three: kb81
// 47 KB a block), two at 32 (uncapped, ptxas took 155 registers: one block).
template <typename scalar_t, typename acc_t, int CO_T, bool STREAM>
__global__ void __launch_bounds__(kThreads, sizeof(acc_t) == 4 ? (CO_T <= 16 ? 3 : 2) : 1)
    convt_strip_kernel(const ConvTParams p, const StripShape s, const scalar_t* __restrict__ x,
                       const scalar_t* __restrict__ w, const scalar_t* __restrict__ bias, scalar_t* __restrict__ y) {
  constexpr int VEC = 16 / sizeof(scalar_t);
  constexpr int SPLIT = CO_T >= 8 ? 2 : 1, CH = CO_T / SPLIT;  // channel parts, channels a thread
  extern __shared__ __align__(16) unsigned char smem[];
  acc_t* w_s = reinterpret_cast<acc_t*>(smem);                               // [tap][ci][CO_T]
  scalar_t* o_s = reinterpret_cast<scalar_t*>(smem + s.w_bytes);               // [CO_T][pitch]
  scalar_t* x_s = reinterpret_cast<scalar_t*>(smem + s.w_bytes + s.o_bytes);  // [height tap][ci][ncols]
  __shared__ int k0w[kMaxPhasesW], off0w[kMaxPhasesW];
  __shared__ acc_t b_s[CO_T];

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  int64_t rest = blockIdx.x;
  const int64_t rt = rest % s.row_tiles;
  rest /= s.row_tiles;
  const int64_t ct = rest % s.co_tiles;
  rest /= s.co_tiles;
  const int64_t g = rest % p.groups, n = rest / p.groups;
  const int64_t co0 = ct * CO_T;
  const int co_n = static_cast<int>(p.Cout_g - co0 < CO_T ? p.Cout_g - co0 : CO_T);
  const int KK = static_cast<int>(p.KH * p.KW), cin_g = static_cast<int>(p.Cin_g);

  // Weights: the tile's co_n * KK values of an input channel are contiguous in memory, so read them in
  // that order (coalesced) and scatter to [tap][ci][c]; channels past the group's end stay zero.
  const int per_ci = co_n * KK;
  for (int e = tid; e < cin_g * per_ci; e += kThreads) {
    const int ci = e / per_ci, r = e - ci * per_ci, c = r / KK, tap = r - c * KK;
    w_s[(tap * cin_g + ci) * CO_T + c] = static_cast<acc_t>(w[((g * p.Cin_g + ci) * p.Cout_g + co0) * KK + r]);
  }
  for (int e = tid; e < KK * cin_g * (CO_T - co_n); e += kThreads) {
    const int c = co_n + e % (CO_T - co_n), row = e / (CO_T - co_n);
    w_s[row * CO_T + c] = acc_t(0);
  }
  if (tid < CO_T) b_s[tid] = bias != nullptr && tid < co_n ? static_cast<acc_t>(bias[g * p.Cout_g + co0 + tid]) : acc_t(0);
  const int phases_w = static_cast<int>(p.sw);
  for (int r = tid; r < phases_w; r += kThreads) {
    const PhaseTaps t = phase_taps(r, p.pw, p.sw, p.dw, p.KW);
    k0w[r] = static_cast<int>(t.k0);
    off0w[r] = t.k0 < p.KW ? static_cast<int>(tap_offset(r, p.pw, p.sw, p.dw, t.k0)) : 0;
  }
  // Every width phase has the same tap step; tap k0 + i*step reads column mw + off0 - i*diw.
  const int stepw = static_cast<int>(phase_taps(0, p.pw, p.sw, p.dw, p.KW).step);
  const int diw = static_cast<int>(stepw * p.dw / p.sw);
  __syncthreads();

  const int64_t HWin = p.Hin * p.Win, plane = p.Hout * p.Wout;
  const scalar_t* x_n = x + (n * p.Cin + g * p.Cin_g) * HWin;
  scalar_t* y_n = y + (n * p.Cout + g * p.Cout_g + co0) * plane;
  const int mt = s.tw / phases_w, mt2 = (mt + 1) / 2;
  // A channel's row misalignment (in elements from a 16-byte boundary) steps by the plane's each channel.
  const int plane_mis = static_cast<int>(plane & (VEC - 1));
  const int64_t oh_end = std::min(p.Hout, (rt + 1) * s.rows);
  for (int64_t oh = rt * s.rows; oh < oh_end; ++oh) {
    const int64_t rh = oh % p.sh, mh = oh / p.sh;
    const PhaseTaps th = phase_taps(rh, p.ph, p.sh, p.dh, p.KH);
    const bool fill = th.k0 >= p.KH;
    const int nth = fill ? 0 : static_cast<int>((p.KH - 1 - th.k0) / th.step + 1);
    const int64_t ih0 = fill ? 0 : mh + tap_offset(rh, p.ph, p.sh, p.dh, th.k0);
    const int64_t dih = th.step * p.dh / p.sh;
    for (int tile = 0; tile < s.col_tiles; ++tile) {
      const int64_t ow0 = int64_t(tile) * s.tw;
      const int len = static_cast<int>(std::min<int64_t>(s.tw, p.Wout - ow0));
      scalar_t* dst0 = y_n + oh * p.Wout + ow0;
      const int mis0 = static_cast<int>((reinterpret_cast<uintptr_t>(dst0) / sizeof(scalar_t)) & (VEC - 1));
      if (!fill) {
        // The input this segment reads, zero outside the image: every load issued at once, and the
        // taps below need no bounds tests.
        const int64_t iw_lo = ow0 / p.sw + s.off_min;
        // A warp a pair of staged rows (height tap, channel), its lanes along the columns: the row's
        // address and bounds once per row, and up to 2 x kStageBatch loads in flight before their stores.
        const int nrows = nth * cin_g;
        for (int r0 = warp; r0 < nrows; r0 += 2 * kWarps) {
          const scalar_t* srow[2];
          bool row_ok[2];
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int r = r0 + h * kWarps, hi = r / cin_g, ci = r - hi * cin_g;
            const int64_t ih = ih0 - hi * dih;
            row_ok[h] = r < nrows && ih >= 0 && ih < p.Hin;
            srow[h] = x_n + ci * HWin + (row_ok[h] ? ih : 0) * p.Win;
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
              const int r = r0 + h * kWarps;
#pragma unroll
              for (int u = 0; u < kStageBatch; ++u) {
                const int col = c0 + 32 * u;
                if (r < nrows && col < s.ncols) x_s[r * s.ncols + col] = v[h][u];
              }
            }
          }
        }
        __syncthreads();
        // Two columns a thread, t and t + mt2 of one width phase, so one weight load serves both; and
        // the tile's channels split in SPLIT parts across consecutive warps, so the work of a segment's
        // tapped phases spreads over the block (one part: kb81's three tapped phases were three warps
        // of eight, the others waiting at the barrier).
        const int pairs = phases_w * mt2;
        for (int i = tid; i < (pairs + 31) / 32 * 32 * SPLIT; i += kThreads) {
          const int blk = i / 32, part = blk % SPLIT, pi = blk / SPLIT * 32 + i % 32;
          if (pi >= pairs) continue;
          const int rw = pi / mt2, t = pi - rw * mt2;
          const int j = rw + t * phases_w, j2 = j + mt2 * phases_w;
          if (j >= len) continue;
          const bool two = t + mt2 < mt && j2 < len;
          acc_t acc[CH], acc2[CH];
#pragma unroll
          for (int c = 0; c < CH; ++c) acc[c] = acc2[c] = acc_t(0);
          const int k0 = k0w[rw];
          if (k0 < p.KW) {
            const scalar_t* x_t = x_s + t + off0w[rw] - s.off_min;
            for (int hi = 0; hi < nth; ++hi) {
              const int kh = static_cast<int>(th.k0 + hi * th.step);
              int sw_i = 0;
              for (int kw = k0; kw < p.KW; kw += stepw, ++sw_i) {
                const acc_t* w_t = w_s + (kh * static_cast<int>(p.KW) + kw) * cin_g * CO_T + part * CH;
                const scalar_t* xp = x_t + hi * cin_g * s.ncols - sw_i * diw;
#pragma unroll 1
                for (int ci = 0; ci < cin_g; ++ci, xp += s.ncols, w_t += CO_T) {
                  // the second column's value may lie past the staged row (read, never used): x_s has slack
                  const acc_t xv = static_cast<acc_t>(xp[0]), xv2 = static_cast<acc_t>(xp[mt2]);
                  acc_t wv[CH];
                  load_weights<acc_t, CH>(w_t, wv);
#pragma unroll
                  for (int c = 0; c < CH; ++c) {
                    acc[c] += wv[c] * xv;
                    acc2[c] += wv[c] * xv2;
                  }
                }
              }
            }
          }
#pragma unroll
          for (int c = 0; c < CH; ++c) {
            const int cc = part * CH + c, mis = (mis0 + cc * plane_mis) & (VEC - 1);
            o_s[cc * s.pitch + mis + j] = static_cast<scalar_t>(acc[c] + b_s[cc]);
            if (two) o_s[cc * s.pitch + mis + j2] = static_cast<scalar_t>(acc2[c] + b_s[cc]);
          }
        }
        __syncthreads();
      }
      // A warp a channel, its lanes along the row. Position q of a channel's segment is column q - mis:
      // whole 16-byte vectors k in [k_lo, k_hi) first, then the partial vectors at either end, an
      // element a lane (branching per vector cost ~60 instructions a stored vector, ncu v11).
      for (int c = warp; c < co_n; c += kWarps) {
        const int mis = (mis0 + c * plane_mis) & (VEC - 1), end = mis + len;
        const int k_lo = mis > 0 ? 1 : 0, k_hi = end / VEC;
        scalar_t* row = dst0 + c * plane - mis;
        const scalar_t* src = o_s + c * s.pitch;
        const scalar_t fill_v = static_cast<scalar_t>(b_s[c]);
        if (fill) {
          const uint4 v = splat16(fill_v);
          for (int k = k_lo + lane; k < k_hi; k += 32) store16<STREAM>(row + k * VEC, v);
        } else {
          for (int k = k_lo + lane; k < k_hi; k += 32)
            store16<STREAM>(row + k * VEC, *reinterpret_cast<const uint4*>(src + k * VEC));
        }
        // lanes 0..VEC-1: the head [mis, VEC) when mis > 0; lanes 16..16+VEC-1: the tail from the
        // last whole vector (or from the head's end) to end
        const int tail = (k_hi > k_lo ? k_hi : k_lo) * VEC;
        const int q = lane < 16 ? lane : tail + lane - 16;
        const bool ok = lane < 16 ? lane < VEC && mis > 0 && q >= mis && q < end : lane - 16 < VEC && q < end;
        if (ok) row[q] = fill ? fill_v : src[q];
      }
      // No barrier here: the next segment writes x_s, read only before the barrier above, and o_s only
      // after its own staging barrier.
    }
  }
}

// The group's channels rounded up to a tile, at most 32: a wider tile restages the input fewer times
// (kb81, 64 channels: 0.58 ms with 32 against 0.72 with 16), a padded one computes zeros (kb75, 16
// channels: 0.82 with 16, 1.21 with 32).
int auto_co_tile(const ConvTParams& p) { return p.Cout_g <= 4 ? 4 : p.Cout_g <= 8 ? 8 : p.Cout_g <= 16 ? 16 : 32; }

int64_t acc_size(at::ScalarType dtype) { return dtype == at::kDouble ? 8 : 4; }

StripShape shape_for(const ConvTParams& p, at::ScalarType dtype, int co_tile, int sms) {
  const int64_t esize = at::elementSize(dtype), vec = 16 / esize;
  StripShape s;
  const int64_t cols = kColBytes / esize;
  s.col_tiles = static_cast<int>((p.Wout + cols - 1) / cols);
  // Even segments, each a whole number of width phases.
  const int64_t per = (p.Wout + s.col_tiles - 1) / s.col_tiles;
  s.tw = static_cast<int>((per + p.sw - 1) / p.sw * p.sw);
  s.col_tiles = static_cast<int>((p.Wout + s.tw - 1) / s.tw);
  s.pitch = static_cast<int>((s.tw + vec - 1 + vec - 1) / vec * vec);
  s.co_tiles = (p.Cout_g + co_tile - 1) / co_tile;
  s.w_bytes = align16(p.KH * p.KW * p.Cin_g * co_tile * acc_size(dtype));
  s.o_bytes = align16(int64_t(co_tile) * s.pitch * esize);
  // Offsets (phase + pad - k * dil) / stride over every phase and tap lie in [lo, hi].
  auto floor_div = [](int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); };
  const int64_t lo = floor_div(p.pw - (p.KW - 1) * p.dw, p.sw), hi = floor_div(p.sw - 1 + p.pw, p.sw);
  s.off_min = static_cast<int>(lo);
  s.ncols = static_cast<int>(s.tw / p.sw - 1 + hi - lo + 1);
  const int64_t step_h = phase_taps(0, p.ph, p.sh, p.dh, p.KH).step;
  s.nth = static_cast<int>((p.KH + step_h - 1) / step_h);
  // mt2 + 1 elements of slack: the paired column's read past the last staged row (never used)
  s.x_bytes = align16((int64_t(s.nth) * p.Cin_g * s.ncols + s.tw / p.sw / 2 + 1) * esize);
  // Fewer rows a block where kMaxRows would leave under four blocks an SM.
  s.rows = kMaxRows;
  for (;;) {
    s.row_tiles = (p.Hout + s.rows - 1) / s.rows;
    s.blocks = p.N * p.groups * s.co_tiles * s.row_tiles;
    if (s.rows == 1 || s.blocks >= int64_t(sms) * 4) break;
    s.rows /= 2;
  }
  return s;
}

int64_t smem_bytes(const StripShape& s) { return s.w_bytes + s.o_bytes + s.x_bytes; }

template <typename scalar_t, int CO_T>
void launch(const ConvTParams& p, const StripShape& s, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
            at::Tensor& out, cudaStream_t stream) {
  using acc_t = at::opmath_type<scalar_t>;
  // Outputs larger than L2 stream past it (evict-first stores: kb81 fp32 0.87 vs 1.01 ms); smaller ones
  // stay for the next layer to read.
  const bool stream_out = out.numel() * out.element_size() > kStreamBytes;
  auto kernel = stream_out ? convt_strip_kernel<scalar_t, acc_t, CO_T, true> : convt_strip_kernel<scalar_t, acc_t, CO_T, false>;
  const int64_t smem = smem_bytes(s);
  allow_dynamic_smem(kernel, static_cast<int>(smem));
  kernel<<<static_cast<unsigned>(s.blocks), kThreads, static_cast<size_t>(smem), stream>>>(
      p, s, x.const_data_ptr<scalar_t>(), w.const_data_ptr<scalar_t>(),
      b.defined() ? b.const_data_ptr<scalar_t>() : nullptr, out.mutable_data_ptr<scalar_t>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

int sm_count(int device) {
  int sms = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

}  // namespace

bool strip_supports(const ConvTParams& p, at::ScalarType dtype, int co_tile) {
  if (co_tile == 0) co_tile = auto_co_tile(p);
  // Columns, offsets, channels and phase-table entries are 32-bit.
  constexpr int64_t kInt = int64_t(1) << 30;
  if (p.sw > kMaxPhasesW || p.Wout >= kInt || p.Win >= kInt || p.pw + p.sw + p.KW * p.dw >= kInt ||
      p.Cin_g * p.KH * p.KW >= kInt || p.sh >= kInt)
    return false;
  if (p.KH * p.KW * p.Cin_g * co_tile * acc_size(dtype) > kMaxWeightBytes) return false;
  const StripShape s = shape_for(p, dtype, co_tile, 1);
  // The device's opt-in shared memory a block, less the kernel's static arrays (under 1 KB).
  int optin = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, c10::cuda::current_device()));
  const int64_t limit = int64_t(optin) - 1024;
  return s.blocks < (int64_t(1) << 31) && smem_bytes(s) <= limit;
}

bool strip_preferred(const ConvTParams& p, at::ScalarType dtype) {
  // Taps a phase can have along each axis, times the group's input channels:
  // multiply-adds an output, at most. 64 keeps the arithmetic under the stores'
  // time on an H100 (kb81: 32 an output, 2.4 G in all against 0.8 GB stored).
  const int64_t taps = ((p.KH + p.sh - 1) / p.sh) * ((p.KW + p.sw - 1) / p.sw);
  return p.sh * p.sw > 1 && p.Cin_g * taps <= 64 && strip_supports(p, dtype, 0);
}

void launch_strip(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                  int co_tile, cudaStream_t stream) {
  if (co_tile == 0) co_tile = auto_co_tile(p);
  TORCH_CHECK(strip_supports(p, x.scalar_type(), co_tile), "convt: the strip kernel does not take this problem");
  const StripShape s = shape_for(p, x.scalar_type(), co_tile, sm_count(x.get_device()));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "convt_strip", [&] {
    switch (co_tile) {
      case 4: launch<scalar_t, 4>(p, s, x, w, b, out, stream); break;
      case 8: launch<scalar_t, 8>(p, s, x, w, b, out, stream); break;
      case 32: launch<scalar_t, 32>(p, s, x, w, b, out, stream); break;
      default: launch<scalar_t, 16>(p, s, x, w, b, out, stream);
    }
  });
}

}  // namespace convt
