// The taps path (see convt_taps.h). A block owns a strip of 16 input columns of one image and group and a segment of
// its cell rows (cells_axis.h: the s x s outputs one input position starts, shifted so their taps read the fewest
// offsets), and walks the segment's input rows four at a time, one a warp:
//   - products: the row's 16 pixels times every (output channel, kernel row, kernel column) of the group, reduced over
//     the input channels on mma.sync with the weights as A (up to 6 m16 tiles, staged once a block) and the pixels as
//     B (two n8 tiles), into a ring of rows in shared memory ([slot][product][pixel]). B's fragments are loaded
//     straight from the NCHW input into registers, no staging, and the next row's loads are in flight under this
//     row's stores and sums. With six m-tiles (Pairs below) B's columns are interleaved in pairs of pixels, so a
//     lane's products of a row are 4 consecutive pixels, one 16-byte store into an unpadded ring; with three, a
//     fragment register's 8 pixels x 4 channels are four whole 32-byte sectors, stored as pairs into a padded one;
//   - col2im: each output of the cells whose input rows are all in the ring sums its taps' products there, in a fixed
//     order; a thread owns one (height phase, width phase, cell column), so its taps' offsets sit in registers.
// The cells two strips or segments share are computed by both (16 / 14 columns on FSRCNN's 3 offsets), and no product
// is padding in K, where the cells kernel reads 12-16 offsets x channels.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cells_geom.h"
#include "convt_taps.h"
#include "smem_attr.h"

namespace convt {
namespace {

#include "mma_sync.cuh"

constexpr int kWarps = 4;                 // input rows an iteration: one a warp
constexpr int kThreads = 32 * kWarps;
constexpr int kPx = 16;                   // input columns a strip: two n8 tiles
constexpr int kMaxCin = 64;               // input channels a group
constexpr int kMaxU = 4;                  // input offsets a axis
constexpr int kMaxProducts = 96;          // a pixel's products (gaps included): six m16 tiles

// The ring's rows: uh + kWarps - 1 are read an iteration. A count that kWarps rows an iteration bring back to the
// same slot after kPeriod iterations lets the loop unroll that far, so every slot index is a compile-time constant:
// 6 rows (period 3) where uh == uw is 2 or 3 (KU), 8 (period 2) for any uh <= 4 (KU = 0).
template <int KU>
struct Ring {
  static constexpr int kSlots = KU == 0 ? 8 : 6;
  static constexpr int kPeriod = KU == 0 ? 2 : 3;
  static_assert(kPeriod * kWarps % kSlots == 0 && (KU == 0 ? kMaxU : KU) + kWarps - 1 <= kSlots);
};

// How a block's B columns map to pixels and its products go into the ring. kOn: column n of n-tile nt is pixel
// 4 (n / 2) + 2 nt + n % 2, so a lane's accumulators of a row (columns 2t, 2t + 1 of both n-tiles) are pixels
// 4t .. 4t + 3, one STS.128, and a quarter-warp's stores are two whole 16-float rows on 32 distinct banks at a pitch of
// 16. Else column n is pixel n + 8 nt (each load instruction four whole sectors), stored as float2 pairs, which a
// pitch of 24 puts on 32 distinct banks a half-warp. Six m-tiles take the pairs (FSRCNN TF32 22.1-22.3 us against
// 23.8, session 38's v37/v38); three do not, where at 48 products a pixel the half-used sectors of the paired loads
// cost more than the stores save (DCGAN 64->3 21.9 against 20.8-21.2).
template <int MT>
struct Pairs {
  static constexpr bool kOn = MT == 6;
  static constexpr int kPitch = kOn ? 16 : 24;  // floats a product row of a slot
  static constexpr int kNext = kOn ? 2 : 8;     // pixels from a lane's n-tile 0 column to its n-tile 1 column
};

struct TapsGeom : CellsGeom {
  int np;                // products a pixel, as the col2im orders them: Cout/g x sh x uh x sw x uw (taps and gaps)
  int sc;                // cell columns a strip: kPx - uw + 1, fewer where the (phase, column) lanes outgrow a block
  int strips;            // strips an image
  int rseg = 0, iters = 0;  // cell rows a segment, and its iterations (set by the launch, which knows the occupancy)
  int lanes, lanes_per;   // the col2im's (phase, cell column) lanes, and threads a lane
  // Magic multipliers for the small divisions a thread does once: a / d == (a * magic(d)) >> 16 where a d < 2^16.
  unsigned m_lanes, m_sc, m_sw, m_per_co, m_uw_sw, m_uh, m_uw;
  int8_t th[kAxisMaxS * kAxisMaxU], tw[kAxisMaxS * kAxisMaxU];  // the tap of phase r at offset i, or -1
};

// One iteration's B operands in flight: TF32 words, or half-type elements a register each (packed at use, so the
// loads are not waited on where they are issued).
template <typename T>
struct RowLoads {
  static constexpr bool kHalf = sizeof(T) == 2;
  static constexpr int kKS = kHalf ? kMaxCin / 16 : kMaxCin / 8;  // k-steps, at most
  static constexpr int kWords = kHalf ? 4 : 2;                    // loads a (k-step, n-tile)
  uint32_t v[kKS][2][kWords];
};

// KU: uh == uw == KU, known at compile time (2 or 3), or 0 for any uh, uw <= kMaxU read from g.
template <typename T, int MT, int KU>
__global__ void __launch_bounds__(kThreads, 3)
    convt_taps_kernel(const ConvTParams p, const TapsGeom g, const T* __restrict__ x, const T* __restrict__ w,
                      const T* __restrict__ bias, T* __restrict__ y) {
  constexpr bool kHalf = sizeof(T) == 2;
  constexpr int kK = kHalf ? 16 : 8;  // channels a k-step
  constexpr int kKS = RowLoads<T>::kKS;
  constexpr int kSlots = Ring<KU>::kSlots, kPeriod = Ring<KU>::kPeriod;
  constexpr int kU = KU == 0 ? kMaxU : KU;  // the col2im's offsets a axis, unrolled
  constexpr bool kPaired = Pairs<MT>::kOn;
  constexpr int kPitch = Pairs<MT>::kPitch, kNext = Pairs<MT>::kNext;
  using Bits = std::conditional_t<kHalf, uint16_t, uint32_t>;
  extern __shared__ __align__(16) uint4 sm4[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, img = blockIdx.y, grp = blockIdx.z;
  const int gq = lane >> 2, t = lane & 3;
  const int uh = KU == 0 ? g.uh : KU, uw = KU == 0 ? g.uw : KU;
  uint4* wa = sm4;                                                       // [k-step][m-tile][lane]: A fragments
  float* ring = reinterpret_cast<float*>(wa + g.ksteps * MT * 32);       // [slot][product][kPitch]
  float* sbias = ring + kSlots * g.np * kPitch;                          // [output channel]
  const int slot_floats = g.np * kPitch;

  const int seg = blockIdx.x / g.strips, strip = blockIdx.x - seg * g.strips;
  const int a0 = seg * g.rseg, b0 = strip * g.sc;
  const int nrows = min(g.rseg, g.hc - a0) + uh - 1;  // input rows the segment's cells read

  // B = the input, (channel k) x (column n): b0 / b1 hold channel t / t + 4 of column g (TF32), or the pairs 2t / 2t + 8
  // (half types). A thread loads its columns of both n-tiles in the warp's row (pixels g and g + 8, or with Pairs
  // 4 (g / 2) + g % 2 and 2 past it); addresses are 32-bit offsets from an opaque
  // base (Cin/g x H x W < 2^31, taps_supports), clamped into the image so every load is legal, and the loads outside
  // it (or past the group's channels) are predicated off to zero. Where the whole row is inside, the loads of k-steps
  // the group's channels fill carry no predicate.
  const unsigned hw = unsigned(g.hin) * unsigned(g.win);
  const Bits* src = opaque(reinterpret_cast<const Bits*>(x) + (int64_t(img) * p.Cin + int64_t(grp) * g.cin_g) * hw);
  const int ix0 = b0 + g.db0 + (kPaired ? 4 * (gq >> 1) + (gq & 1) : gq);
  const bool px_in[2] = {ix0 >= 0 && ix0 < g.win, ix0 + kNext >= 0 && ix0 + kNext < g.win};
  const bool strip_in = b0 + g.db0 >= 0 && b0 + g.db0 + kPx <= g.win;
  const int kfull = g.cin_g / kK;  // k-steps with every channel in the group
  RowLoads<T> ld;
  // TF32: channel t + 4 r of k-step ks; half: channel 2t + (r & 1) + 8 (r >> 1).
  auto chan = [&](int ks, int r) { return kHalf ? ks * 16 + 2 * t + (r & 1) + 8 * (r >> 1) : ks * 8 + t + 4 * r; };
  auto load_row = [&](int it) {
    const int j = it * kWarps + warp, iy = a0 + g.da0 + j;
    const bool row_in = j < nrows && iy >= 0 && iy < g.hin;
    const int iyc = min(max(iy, 0), g.hin - 1);
    const unsigned pix[2] = {unsigned(iyc) * g.win + unsigned(min(max(ix0, 0), g.win - 1)),
                             unsigned(iyc) * g.win + unsigned(min(max(ix0 + kNext, 0), g.win - 1))};
    if (row_in && strip_in) {
      // The whole row inside: n-tile 1's pixel is kNext elements past n-tile 0's, and every channel below kfull
      // k-steps is the group's.
      const unsigned o0 = unsigned(chan(0, 0)) * hw + pix[0];
#pragma unroll
      for (int ks = 0; ks < kKS; ++ks) {
        if (ks < kfull) {
#pragma unroll
          for (int r = 0; r < RowLoads<T>::kWords; ++r) {
            const Bits* pk = src + (o0 + unsigned(chan(ks, r) - chan(0, 0)) * hw);
            ld.v[ks][0][r] = uint32_t(__ldg(pk));
            ld.v[ks][1][r] = uint32_t(__ldg(pk + kNext));
          }
        } else if (ks < g.ksteps) {
#pragma unroll
          for (int r = 0; r < RowLoads<T>::kWords; ++r) {
            const int k = chan(ks, r);
            const Bits* pk = src + (unsigned(min(k, g.cin_g - 1)) * hw + pix[0]);
            ld.v[ks][0][r] = k < g.cin_g ? uint32_t(__ldg(pk)) : 0u;
            ld.v[ks][1][r] = k < g.cin_g ? uint32_t(__ldg(pk + kNext)) : 0u;
          }
        }
      }
    } else {
#pragma unroll
      for (int ks = 0; ks < kKS; ++ks) {
        if (ks < g.ksteps) {
#pragma unroll
          for (int nt = 0; nt < 2; ++nt)
#pragma unroll
            for (int r = 0; r < RowLoads<T>::kWords; ++r) {
              const int k = chan(ks, r);
              const unsigned off = unsigned(min(k, g.cin_g - 1)) * hw + pix[nt];
              ld.v[ks][nt][r] = row_in && px_in[nt] && k < g.cin_g ? uint32_t(__ldg(src + off)) : 0u;
            }
        }
      }
    }
  };
  load_row(0);  // in flight under the weights' staging

  // The products are ordered (output channel, height phase r, height offset i, width phase q, width offset j), so an
  // output's taps are uw consecutive rows a height offset, one pixel apart each: immediate offsets in the col2im.
  // Product m's weight is column (output channel, kh, kw) of w[k][.], or none where phase r has no tap at offset i
  // or q none at j: those rows are zero, and their products add nothing.
  const int uw_sw = uw * g.sw, per_co = g.sh * uh * uw_sw;
  if (tid < g.cout_g) sbias[tid] = bias != nullptr ? static_cast<float>(bias[int64_t(grp) * g.cout_g + tid]) : 0.f;

  // A = the weights, (product m) x (input channel k): m16n8k8 TF32 a0..a3 hold (g, t), (g + 8, t), (g, t + 4),
  // (g + 8, t + 4); m16n8k16 the pairs (g, 2t), (g + 8, 2t), (g, 2t + 8), (g + 8, 2t + 8). A thread stages one
  // product row: all its loads in flight at once (one trip to L2 a block), each address one IMAD.WIDE from an opaque
  // base, a guard only in the k-step the group's channels do not fill, and the gaps' rows zero without a load.
  if (tid < MT * 16) {
    const int m = tid, mt = m >> 4, hm = (m >> 3) & 1, gm = m & 7;
    int col = -1;
    if (m < g.np) {
      const int co = div_small(m, g.m_per_co), rest = m - co * per_co, ri = div_small(rest, g.m_uw_sw);
      const int qj = rest - ri * uw_sw, ra = div_small(ri, g.m_uh), ia = ri - ra * uh;
      const int qa = div_small(qj, g.m_uw), ja = qj - qa * uw;
      const int kh = g.th[ra * kAxisMaxU + ia], kwj = g.tw[qa * kAxisMaxU + ja];
      if (kh >= 0 && kwj >= 0) col = co * g.kk + kh * g.kw + kwj;
    }
    const int ncol = g.kk * g.cout_g;
    uint32_t v[kKS][kK];
#pragma unroll
    for (int ks = 0; ks < kKS; ++ks)
#pragma unroll
      for (int kk = 0; kk < kK; ++kk) v[ks][kk] = 0u;
    if (col >= 0) {
      const Bits* wq = opaque(reinterpret_cast<const Bits*>(w) + (int64_t(grp) * g.cin_g * ncol + col));
#pragma unroll
      for (int ks = 0; ks < kKS; ++ks) {
        if (ks < kfull) {
#pragma unroll
          for (int kk = 0; kk < kK; ++kk) v[ks][kk] = uint32_t(wq[(ks * kK + kk) * ncol]);
        } else if (ks < g.ksteps) {
#pragma unroll
          for (int kk = 0; kk < kK; ++kk)
            if (ks * kK + kk < g.cin_g) v[ks][kk] = uint32_t(wq[(ks * kK + kk) * ncol]);
        }
      }
    }
    uint32_t* wrow = reinterpret_cast<uint32_t*>(wa) + (mt * 32 + gm * 4) * 4 + hm;
#pragma unroll
    for (int ks = 0; ks < kKS; ++ks) {
      if (ks < g.ksteps) {
        uint32_t* wk = wrow + ks * MT * 128;
        if constexpr (kHalf) {
          // Channels 16 ks + kk, kk + 1 (kk even): lane (g, t = (kk % 8) / 2), register hm + 2 (kk / 8).
#pragma unroll
          for (int kk = 0; kk < kK; kk += 2) wk[((kk & 7) >> 1) * 4 + 2 * (kk >> 3)] = v[ks][kk] | v[ks][kk + 1] << 16;
        } else {
          // Channel 8 ks + kk: lane (g, t = kk % 4), register hm + 2 (kk / 4).
#pragma unroll
          for (int kk = 0; kk < kK; ++kk) wk[(kk & 3) * 4 + 2 * (kk >> 2)] = tf32_bits(v[ks][kk]);
        }
      }
    }
  }

  // The col2im's lanes: (height phase r, width phase q, cell column bl), bl fastest so a warp's reads of one product
  // row are consecutive pixels; sub splits the output channels where lanes are fewer than threads.
  const int lanes_per = g.lanes_per, sub = div_small(tid, g.m_lanes), li = tid - sub * g.lanes;
  const int rq = div_small(li, g.m_sc), bl = li - rq * g.sc, r = div_small(rq, g.m_sw), q = rq - r * g.sw;
  const int ox = (b0 + bl) * g.sw - g.cw + q;
  const bool ox_in = sub < lanes_per && ox >= 0 && ox < g.wout;
  // Tap (i, j) of output channel co: product row ((co sh + r) uh + i) uw sw + q uw + j, pixel bl + j.
  const int i_floats = uw_sw * kPitch;
  const float* tbase = ring + (r * uh * uw_sw + q * uw) * kPitch + bl;
  const unsigned plane = unsigned(g.hout) * unsigned(g.wout);
  T* yb = y + (int64_t(img) * p.Cout + int64_t(grp) * g.cout_g) * int64_t(plane) + (ox_in ? ox : 0);
  // The segment's cell rows whose phase-r output lies in the image: cell a's is sh a - ch + r, so a >= 1 where
  // r < ch, and a <= (hout - 1 + ch - r) / sh.
  const int top = g.hout - 1 + g.ch - r;  // negative where no cell's phase-r output is in the image
  const int c_lo = max(0, (r < g.ch ? 1 : 0) - a0);
  const int c_hi = min(min(g.rseg, g.hc - a0), (top < 0 ? 0 : top / g.sh + 1) - a0);
  const unsigned row_step = unsigned(g.sh) * unsigned(g.wout);
  // Input row R of the segment sits in slot R mod kSlots. Iteration it writes rows 4 it + warp and its sums read rows
  // 4 it - (uh - 1) + k, k < kWarps + uh - 1; it mod kPeriod fixes both slots, so the loop below is unrolled by
  // kPeriod and each slot index is a compile-time constant (slot_at; ptxas keeps its offset or rebuilds it with one
  // IMAD) or, for KU = 0's runtime uh, one add and mask (kSlots = 8).
  int soff[kSlots];
#pragma unroll
  for (int s = 0; s < kSlots; ++s) soff[s] = s * slot_floats;
  float* wrow_at[kPeriod];
#pragma unroll
  for (int ph = 0; ph < kPeriod; ++ph)
    wrow_at[ph] = ring + ((ph * kWarps + warp) % kSlots) * slot_floats + gq * kPitch + (kPaired ? 4 : 2) * t;
  const int rbase = kSlots - (uh - 1);  // the slot of row -(uh - 1), less kSlots
  auto slot_at = [&](int ph, int k) {
    if constexpr (KU != 0) return soff[(kSlots - (KU - 1) + ph * kWarps + k) % kSlots];
    else return ((rbase + ph * kWarps + k) & (kSlots - 1)) * slot_floats;
  };
  __syncthreads();  // the weights

  for (int it0 = 0; it0 < g.iters; it0 += kPeriod) {
#pragma unroll
    for (int ph = 0; ph < kPeriod; ++ph) {
      const int it = it0 + ph;
      if (it < g.iters) {  // a whole number of periods but the last
        float acc[MT][2][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[mt][e >> 2][e & 3] = 0.f;
#pragma unroll
        for (int ks = 0; ks < kKS; ++ks) {
          if (ks == 0 || ks < g.ksteps) {  // ksteps >= 1: the first k-step's accumulators start at zero
            uint32_t b[2][2];
#pragma unroll
            for (int nt = 0; nt < 2; ++nt) {
              if constexpr (kHalf) {
                b[nt][0] = ld.v[ks][nt][0] | ld.v[ks][nt][1] << 16;
                b[nt][1] = ld.v[ks][nt][2] | ld.v[ks][nt][3] << 16;
              } else {
                b[nt][0] = tf32_bits(ld.v[ks][nt][0]);
                b[nt][1] = tf32_bits(ld.v[ks][nt][1]);
              }
            }
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
              const uint4 av = wa[(ks * MT + mt) * 32 + lane];
              const uint32_t a[4] = {av.x, av.y, av.z, av.w};
              Mma<T>::run(acc[mt][0], a, b[0]);
              Mma<T>::run(acc[mt][1], a, b[1]);
            }
          }
        }
        if (it + 1 < g.iters) load_row(it + 1);  // in flight under the stores and sums below

        // c0, c1: product g, columns 2t, 2t + 1 of n-tile nt; c2, c3: product g + 8 (Pairs: which pixels those are,
        // and how they are stored). Rows past the products (m-tiles' padding) have no room in a slot; with six
        // m-tiles np > 48, so the first three are whole.
        float* prow = wrow_at[ph];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          const int m = mt * 16 + gq;
          const bool full = (mt + 1) * 16 <= (MT == 6 ? 48 : 0);
          if constexpr (kPaired) {
            if (full || m < g.np)
              *reinterpret_cast<float4*>(prow + mt * 16 * kPitch) =
                  make_float4(acc[mt][0][0], acc[mt][0][1], acc[mt][1][0], acc[mt][1][1]);
            if (full || m + 8 < g.np)
              *reinterpret_cast<float4*>(prow + (mt * 16 + 8) * kPitch) =
                  make_float4(acc[mt][0][2], acc[mt][0][3], acc[mt][1][2], acc[mt][1][3]);
          } else {
#pragma unroll
            for (int nt = 0; nt < 2; ++nt) {
              if (full || m < g.np)
                *reinterpret_cast<float2*>(prow + mt * 16 * kPitch + nt * 8) =
                    make_float2(acc[mt][nt][0], acc[mt][nt][1]);
              if (full || m + 8 < g.np)
                *reinterpret_cast<float2*>(prow + (mt * 16 + 8) * kPitch + nt * 8) =
                    make_float2(acc[mt][nt][2], acc[mt][nt][3]);
            }
          }
        }
        __syncthreads();

        if (ox_in) {
          const int c0 = it * kWarps - (uh - 1);  // the segment's cell row of cc = 0
          // (wraps where c0 < 0: unused)
          const unsigned oy0 = unsigned((a0 + c0) * g.sh - g.ch + r) * unsigned(g.wout);
          for (int co = sub; co < g.cout_g; co += lanes_per) {
            const float* pco = tbase + co * per_co * kPitch;
            T* yco = yb + co * plane;
#pragma unroll
            for (int cc = 0; cc < kWarps; ++cc) {
              const int c = c0 + cc;
              if (c >= c_lo && c < c_hi) {
                float sum = sbias[co];
#pragma unroll
                for (int i = 0; i < kU; ++i)
                  if (KU != 0 || i < uh) {
                    const float* pi = pco + slot_at(ph, cc + i) + i * i_floats;
#pragma unroll
                    for (int j = 0; j < kU; ++j)
                      if (KU != 0 || j < uw) sum += pi[j * (kPitch + 1)];
                  }
                yco[oy0 + unsigned(cc) * row_step] = static_cast<T>(sum);
              }
            }
          }
        }
        __syncthreads();  // the sums done reading the slots the next iteration writes
      }
    }
  }
}

int smem_bytes(const TapsGeom& g, int mt, int slots) {
  const int pitch = mt == 6 ? Pairs<6>::kPitch : Pairs<3>::kPitch;
  return g.ksteps * mt * 32 * 16 + slots * g.np * pitch * 4 + g.cout_g * 4;
}

// False where the shape is outside the kernel's limits (convt_taps.h). Each axis takes the shift whose taps read the
// fewest offsets: a strip's products are computed whatever it owns, so fewer offsets own more cells a strip.
bool geometry(const ConvTParams& p, int elem, TapsGeom& g) {
  if (p.Cin_g > kMaxCin || p.KH > 127 || p.KW > 127) return false;
  AxisCells ah[2], aw[2];
  const int nh = axis_candidates(p.sh, p.ph, p.dh, p.KH, ah), nw = axis_candidates(p.sw, p.pw, p.dw, p.KW, aw);
  if (nh == 0 || nw == 0) return false;
  const AxisCells &h = ah[nh - 1], &w = aw[nw - 1];  // the fewest offsets: the shifted candidate where there is one
  if (h.u > kMaxU || w.u > kMaxU || p.sh * p.sw > kThreads) return false;
  const int64_t np = p.Cout_g * p.sh * h.u * p.sw * w.u;
  if (np > kMaxProducts) return false;
  const int64_t lim = int64_t(1) << 31;
  if (p.Cin_g * p.Hin * p.Win >= lim || p.Cout_g * p.Hout * p.Wout >= lim) return false;
  const int64_t hc = (p.Hout + h.c + p.sh - 1) / p.sh, wc = (p.Wout + w.c + p.sw - 1) / p.sw;
  g.sc = std::min<int>(kPx - w.u + 1, kThreads / static_cast<int>(p.sh * p.sw));
  const int64_t strips = (wc + g.sc - 1) / g.sc;
  if (strips * hc >= lim) return false;
  fill_cells_geom(p, h, w, elem == 2 ? 16 : 8, g);
  g.np = static_cast<int>(np);
  g.strips = static_cast<int>(strips);
  g.lanes = g.sh * g.sw * g.sc;
  g.lanes_per = kThreads / g.lanes;
  g.m_lanes = magic(g.lanes);
  g.m_sc = magic(g.sc);
  g.m_sw = magic(g.sw);
  g.m_per_co = magic(g.sh * g.uh * g.sw * g.uw);
  g.m_uw_sw = magic(g.sw * g.uw);
  g.m_uh = magic(g.uh);
  g.m_uw = magic(g.uw);
  std::copy(h.tab, h.tab + kAxisMaxS * kAxisMaxU, g.th);
  std::copy(w.tab, w.tab + kAxisMaxS * kAxisMaxU, g.tw);
  return true;
}

template <typename T>
void launch_typed(const ConvTParams& p, TapsGeom g, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                  at::Tensor& out, cudaStream_t stream) {
  if (p.N == 0 || p.groups == 0 || g.hout == 0 || g.wout == 0) return;
  const T* bp = b.defined() ? b.const_data_ptr<T>() : nullptr;
  auto go = [&](auto kernel, int mt, int slots) {
    const int bytes = smem_bytes(g, mt, slots);
    allow_dynamic_smem(kernel, bytes);
    // Segments: as many as fill the blocks that run at once (at least one a strip), each a whole number of
    // iterations' rows where that costs no more segments.
    const int dev = x.get_device();
    const int64_t resident = int64_t(sm_count(dev)) * std::max(1, blocks_per_sm(kernel, kThreads, bytes, dev));
    const int64_t hc = g.hc, units = p.N * p.groups * g.strips;
    const int64_t want = std::clamp<int64_t>(resident / units, 1, hc);
    int64_t rseg = (hc + want - 1) / want;
    const int64_t rounded = (rseg + g.uh - 1 + kWarps - 1) / kWarps * kWarps - (g.uh - 1);
    if ((hc + rounded - 1) / rounded == (hc + rseg - 1) / rseg) rseg = rounded;
    const int64_t segs = (hc + rseg - 1) / rseg;
    g.rseg = static_cast<int>(rseg);
    g.iters = (g.rseg + g.uh - 1 + kWarps - 1) / kWarps;
    const dim3 grid(static_cast<unsigned>(segs * g.strips), static_cast<unsigned>(p.N),
                    static_cast<unsigned>(p.groups));
    kernel<<<grid, kThreads, bytes, stream>>>(p, g, x.const_data_ptr<T>(), w.const_data_ptr<T>(), bp,
                                              out.mutable_data_ptr<T>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  };
  // KU: uh == uw at compile time where both are 2 (DCGAN's 4x4 stride 2) or 3 (FSRCNN's 9x9 stride 3), so the
  // col2im has no offset guards and the ring's slots are registers; any other uh, uw <= 4 reads them from g.
  const int ku = g.uh == g.uw && (g.uh == 2 || g.uh == 3) ? g.uh : 0;
  auto pick = [&](auto mt_c) {
    constexpr int MT = decltype(mt_c)::value;
    if (ku == 2) go(convt_taps_kernel<T, MT, 2>, MT, Ring<2>::kSlots);
    else if (ku == 3) go(convt_taps_kernel<T, MT, 3>, MT, Ring<3>::kSlots);
    else go(convt_taps_kernel<T, MT, 0>, MT, Ring<0>::kSlots);
  };
  if (g.np <= 48) pick(std::integral_constant<int, 3>{});
  else pick(std::integral_constant<int, 6>{});
}

}  // namespace

int taps_products(const ConvTParams& p, const at::Tensor& x, bool tf32) {
  const at::ScalarType dt = x.scalar_type();
  if (dt != at::kHalf && dt != at::kBFloat16 && !(dt == at::kFloat && tf32)) return 0;
  if (p.groups > 65535 || p.N > 65535) return 0;  // grid.z, grid.y
  TapsGeom g;
  return geometry(p, static_cast<int>(x.element_size()), g) ? g.np : 0;
}

bool taps_supports(const ConvTParams& p, const at::Tensor& x, bool tf32) { return taps_products(p, x, tf32) > 0; }

void launch_taps(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 cudaStream_t stream) {
  TapsGeom g;
  CONVT_CHECK(geometry(p, static_cast<int>(x.element_size()), g), "convt: the taps kernel does not take this shape");
  switch (x.scalar_type()) {
    case at::kFloat: launch_typed<float>(p, g, x, w, b, out, stream); break;
    case at::kHalf: launch_typed<at::Half>(p, g, x, w, b, out, stream); break;
    case at::kBFloat16: launch_typed<at::BFloat16>(p, g, x, w, b, out, stream); break;
    default: TORCH_CHECK(false, "convt: the taps kernel takes float32 (as TF32), float16 and bfloat16");
  }
}

}  // namespace convt
