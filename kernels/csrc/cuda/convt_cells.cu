// The cells path (see convt_cells.h). A block of 8 warps owns 8 x 32 cells of one image and group, a warp one row of
// them as two 16-cell m-tiles against one or two n8 tiles of a cell's outputs, on mma.sync: m16n8k8 TF32 for fp32
// (3xTF32 for strict fp32), m16n8k16 for fp16/bf16. Per chunk of input channels (8 fp32, 16 half) the block stages
// the input rows and columns its cells' offsets reach, channel-last, 32 bytes of k a cell at a 48-byte pitch (so one
// ldmatrix.x4 is a 16-cell A fragment at any column shift, its 8-row matrices in 8 bank groups), and the chunk's
// weights as B fragments, one 16-byte (or 8-byte) load a lane an offset. Each offset of the reduction is then a
// shift of the ldmatrix addresses. The input goes through registers in two halves, each loaded before half of this
// chunk's offsets and stored after them (one barrier a chunk); fp32 is rounded to TF32 there, once.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cells_axis.h"
#include "convt_cells.h"
#include "smem_attr.h"

namespace convt {
namespace {

#include "mma_sync.cuh"

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kBR = kWarps;                // cell rows a block: a warp a row of two 16-cell m-tiles
constexpr int kBC = 32;                    // cell columns a block
constexpr int kMaxU = kAxisMaxU;           // input offsets a axis (a table row)
constexpr int kMaxUH = 5;                  // input offsets along the height (the staged halo's rows)
constexpr int kMaxUU = 16;                 // offsets in all (a B register each a chunk)
constexpr int kMaxS = kAxisMaxS;           // stride a axis (a cell's outputs are at most 16)
constexpr int kPitchC = kBC + kMaxU;       // staged cells a halo row (32 + uw - 1 used)
constexpr int kMaxHR = kBR + kMaxUH - 1;
constexpr int kSlots = (kMaxHR * kPitchC + kThreads - 1) / kThreads;  // a thread's staged cells, at most

struct CellsGeom {
  int hin, win, hout, wout;
  int sh, sw, kw, kk;
  int uh, uw, u;         // input offsets a axis, and all of them
  int da0, db0;          // the least offset a axis: cell a, offset i reads input row a + da0 + i
  int ch, cw;            // the cells' shift a axis: cell a's first output row is sh a - ch
  int cin_g, cout_g, n;  // n: a cell's outputs, Cout/g x sh x sw
  int groups, tiles_r, tiles_c;
  int hr, hcu;           // staged halo rows and used columns: kBR + uh - 1, kBC + uw - 1
  int nchunks;
  int64_t blocks;
  // Per axis, the tap of phase r that reads offset i, or -1: [r * kMaxU + i].
  int8_t th[kMaxS * kMaxU], tw[kMaxS * kMaxU];
};

// False where the shape is outside the kernel's limits (convt_cells.h). slots: blocks the device runs at once. A
// shift adds a row or column of cells (part of the first and last cells falls outside the output), which can add a
// row or column of tiles: each axis's shift is taken where the offsets saved outweigh the waves of blocks added
// (FSRCNN, 256 x 256 input on 132 SMs: the height's, 12 offsets in 264 blocks, one wave; both shifts, 9 offsets in
// 297 blocks, took two waves and ran 37 us against 28 unshifted; DCGAN 64->3 at 32 x 32 keeps none).
bool geometry(const ConvTParams& p, CellsGeom& sg, int64_t slots) {
  const int64_t n = p.Cout_g * p.sh * p.sw;
  if (n > 16 || p.KH > 127 || p.KW > 127) return false;
  AxisCells ah[2], aw[2];
  const int nh = axis_candidates(p.sh, p.ph, p.dh, p.KH, ah), nw = axis_candidates(p.sw, p.pw, p.dw, p.KW, aw);
  const int64_t lim = int64_t(1) << 31;
  // 32-bit offsets from a group's base: input channels x pixels, and (channels + a chunk) x a channel's weights.
  if (p.Cin_g * p.Hin * p.Win >= lim || p.Hout * p.Wout >= lim || (p.Cin_g + 16) * p.Cout_g * p.KH * p.KW >= lim)
    return false;
  int64_t best_cost = INT64_MAX;
  const AxisCells *bh = nullptr, *bw = nullptr;
  int64_t best_tr = 0, best_tc = 0;
  for (int i = 0; i < nh; ++i)
    for (int j = 0; j < nw; ++j) {
      const AxisCells &h = ah[i], &w = aw[j];
      if (h.u > kMaxUH || h.u * w.u > kMaxUU) continue;
      const int64_t hc = (p.Hout + h.c + p.sh - 1) / p.sh, wc = (p.Wout + w.c + p.sw - 1) / p.sw;
      const int64_t tr = (hc + kBR - 1) / kBR, tcn = (wc + kBC - 1) / kBC;
      const int64_t blocks = p.N * p.groups * tr * tcn;
      // A block's time as its offsets plus ~4 offsets' worth of staging, times the waves.
      const int64_t cost = ((blocks + slots - 1) / slots) * (h.u * w.u + 4);
      if (cost < best_cost) {
        best_cost = cost;
        bh = &h;
        bw = &w;
        best_tr = tr;
        best_tc = tcn;
      }
    }
  if (bh == nullptr) return false;
  std::copy(bh->tab, bh->tab + kMaxS * kMaxU, sg.th);
  std::copy(bw->tab, bw->tab + kMaxS * kMaxU, sg.tw);
  sg.uh = bh->u;
  sg.uw = bw->u;
  sg.da0 = bh->d0;
  sg.db0 = bw->d0;
  sg.ch = bh->c;
  sg.cw = bw->c;
  sg.hin = static_cast<int>(p.Hin);
  sg.win = static_cast<int>(p.Win);
  sg.hout = static_cast<int>(p.Hout);
  sg.wout = static_cast<int>(p.Wout);
  sg.sh = static_cast<int>(p.sh);
  sg.sw = static_cast<int>(p.sw);
  sg.kw = static_cast<int>(p.KW);
  sg.kk = static_cast<int>(p.KH * p.KW);
  sg.u = sg.uh * sg.uw;
  sg.cin_g = static_cast<int>(p.Cin_g);
  sg.cout_g = static_cast<int>(p.Cout_g);
  sg.n = static_cast<int>(n);
  sg.groups = static_cast<int>(p.groups);
  sg.tiles_r = static_cast<int>(best_tr);
  sg.tiles_c = static_cast<int>(best_tc);
  sg.hr = kBR + sg.uh - 1;
  sg.hcu = kBC + sg.uw - 1;
  sg.nchunks = 0;  // set per dtype by the launch
  sg.blocks = p.N * p.groups * best_tr * best_tc;
  return sg.blocks < lim;
}

// Blocks the device runs at once: two an SM (__launch_bounds__(kThreads, 2); a block's shared memory is under half
// an SM's).
int64_t resident_blocks(const at::Tensor& x) { return 2 * int64_t(sm_count(x.get_device())); }

// Words a staged cell: 8 a k-step (8 fp32 or 16 half channels) and 4 of padding, so 8 consecutive cells at this
// pitch (48 or 80 bytes) hit 8 distinct 16-byte bank groups.
__host__ __device__ constexpr int cell_words(int ks) { return 8 * ks + 4; }

__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// KS: k-steps a chunk (8 or 16 fp32 channels, 16 or 32 half).
template <typename T, bool kStrict, int NT, int KS>
__global__ void __launch_bounds__(kThreads, 2)
    convt_cells_kernel(const ConvTParams p, const CellsGeom sg, const T* __restrict__ x, const T* __restrict__ w,
                       const T* __restrict__ bias, T* __restrict__ y) {
  constexpr bool kHalf = sizeof(T) == 2;
  constexpr bool kRound = !kHalf && !kStrict;  // TF32: rounded once, as staged
  constexpr int NP = 8 * NT;                   // a cell's outputs, padded to the n8 tiles
  constexpr int BW = 2 * NT;                   // B words a lane an offset
  constexpr int kPerK = 32 * BW;               // B words an offset a k-step
  constexpr int kPerO = KS * kPerK;            // B words an offset
  constexpr int kBSlots = (kMaxUU * kPerO + kThreads - 1) / kThreads;
  constexpr int kCellWords = cell_words(KS);
  extern __shared__ __align__(16) uint32_t sm[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int halo_words = sg.hr * kPitchC * kCellWords, wb_words = sg.u * kPerO;
  uint32_t* halo = sm;                                     // [2][hr][kPitchC][kCellWords]
  uint32_t* wb = sm + 2 * halo_words;                      // [2][u][KS][lane][BW], fragment order
  int* toff = reinterpret_cast<int*>(wb + 2 * wb_words);   // [u][NP]: the weight a (offset, output) reads, or -1

  unsigned blk = blockIdx.x;  // < 2^31 (cells_supports)
  const int tc = static_cast<int>(blk % sg.tiles_c);
  blk /= sg.tiles_c;
  const int tr = static_cast<int>(blk % sg.tiles_r);
  blk /= sg.tiles_r;
  const int grp = static_cast<int>(blk % sg.groups);
  const int64_t img = blk / sg.groups;
  const int a0 = tr * kBR, b0 = tc * kBC;
  const int64_t hw = int64_t(sg.hin) * sg.win;
  using Bits = std::conditional_t<kHalf, uint16_t, uint32_t>;
  const Bits* xg = opaque(reinterpret_cast<const Bits*>(x) + (img * p.Cin + int64_t(grp) * sg.cin_g) * hw);
  const Bits* wg = opaque(reinterpret_cast<const Bits*>(w) + int64_t(grp) * sg.cin_g * sg.cout_g * sg.kk);
  const int cstride = sg.cout_g * sg.kk;

  for (int e = tid; e < sg.u * NP; e += kThreads) {
    const int o = e / NP, n = e % NP, i = o / sg.uw, j = o - i * sg.uw;
    int v = -1;
    if (n < sg.n) {
      const int ss = sg.sh * sg.sw, co = n / ss, r = n - co * ss, ph = r / sg.sw, q = r - ph * sg.sw;
      const int kh = sg.th[ph * kMaxU + i], kw = sg.tw[q * kMaxU + j];
      if (kh >= 0 && kw >= 0) v = co * sg.kk + kh * sg.kw + kw;
    }
    toff[e] = v;
  }

  // A staging: a thread a staged cell (lanes along a halo row, so the global reads are whole lines), 4 KS words of k
  // a half-chunk, stored as KS 16-byte writes (8 consecutive cells at the cell pitch hit 8 bank groups). Staged
  // cell e is halo row e / kPitchC, column e % kPitchC; columns past the used ones stay unread. Each half is loaded
  // before half of this chunk's offsets and stored after them: half the registers in flight. Half types keep a
  // word's two 16-bit loads apart until the store, so nothing waits on a load before the mma. Offsets are 32-bit
  // from the group's base (Cin/g x H x W < 2^31, cells_supports).
  int goff[kSlots];
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int e = tid + kThreads * s, r = e / kPitchC, c = e - r * kPitchC;
    const int ih = a0 + sg.da0 + r, iw = b0 + sg.db0 + c;
    goff[s] = r < sg.hr && c < sg.hcu && ih >= 0 && ih < sg.hin && iw >= 0 && iw < sg.win ? ih * sg.win + iw : -1;
  }
  const unsigned hwi = unsigned(sg.hin) * unsigned(sg.win);
  // A word's channels: fp32 one, half types a pair; words 4 KS h .. 4 KS h + 4 KS - 1 a half.
  constexpr int KC = (kHalf ? 16 : 8) * KS;  // input channels a chunk
  constexpr int CW = kHalf ? 2 : 1;          // channels a word
  constexpr int HW = 4 * KS;                 // words a half
  uint32_t av[kSlots][HW][CW];
  auto load_a = [&](int kc, int h) {
    const int c = kc * KC + HW * h * CW;
#pragma unroll
    for (int s = 0; s < kSlots; ++s)
#pragma unroll
      for (int q = 0; q < HW * CW; ++q) {
        const bool ok = goff[s] >= 0 && c + q < sg.cin_g;
        av[s][q / CW][q % CW] = ok ? __ldg(xg + (static_cast<unsigned>(goff[s]) + unsigned(c + q) * hwi)) : 0u;
      }
  };
  auto store_a = [&](int buf, int h) {
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      const int e = tid + kThreads * s;
      if (e < sg.hr * kPitchC) {
        uint32_t v[HW];
#pragma unroll
        for (int q = 0; q < HW; ++q) {
          v[q] = av[s][q][0];
          if constexpr (kHalf) v[q] |= av[s][q][CW - 1] << 16;
          if constexpr (kRound) v[q] = tf32_bits(v[q]);
        }
        uint32_t* dst = halo + buf * halo_words + e * kCellWords + HW * h;
#pragma unroll
        for (int q = 0; q < HW; q += 4)
          *reinterpret_cast<uint4*>(dst + q) = make_uint4(v[q], v[q + 1], v[q + 2], v[q + 3]);
      }
    }
  };
  // B staging, after a chunk's mma (the weights are small and L1-resident): a thread owns one B word of every
  // kThreads / kPerO-th offset, its output and k fixed (m16n8k8 b0/b1 hold k t / t + 4 of column g, m16n8k16 b0/b1
  // the pairs at k 2t / 2t + 8), and its offsets' weight positions in registers.
  const int orem = tid % kPerO, bks = orem / kPerK, brem = orem % kPerK, bl = brem / BW, br = brem % BW;
  const int bn = (bl >> 2) + 8 * (br >> 1);
  const int bk = (kHalf ? 2 * (bl & 3) + 8 * (br & 1) : (bl & 3) + 4 * (br & 1)) + bks * (kHalf ? 16 : 8);
  int btap[kBSlots];
  auto stage_b = [&](int kc, int buf) {
    const int c = kc * KC + bk;
    const bool c0 = c < sg.cin_g, c1 = c + 1 < sg.cin_g;
    const unsigned cbase = unsigned(c) * unsigned(cstride);
    uint32_t bv[kBSlots];
#pragma unroll
    for (int m = 0; m < kBSlots; ++m) {
      const int t = btap[m];
      bv[m] = t >= 0 && c0 ? __ldg(wg + (cbase + t)) : 0u;
      if constexpr (kHalf) bv[m] |= (t >= 0 && c1 ? uint32_t(__ldg(wg + (cbase + cstride + t))) : 0u) << 16;
    }
#pragma unroll
    for (int m = 0; m < kBSlots; ++m) {
      const int e = tid + m * kThreads;
      if (e < wb_words) wb[buf * wb_words + e] = kRound ? tf32_bits(bv[m]) : bv[m];
    }
  };

  float acc[2][NT][4];
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][nt][e] = 0.f;

  // The lane's ldmatrix row in m-tile 0: cell lane & 15 of the warp's row, k words 0-3 (lanes 0-15) or 4-7 of k-step
  // 0 (k-step ks 8 words on).
  const uint32_t a_lane = static_cast<uint32_t>(__cvta_generic_to_shared(halo)) +
                          ((warp * kPitchC + (lane & 15)) * kCellWords + (lane >> 4) * 4) * 4;
  // Offset rows [i0, i1) of a chunk: each offset is a shift of the lane's ldmatrix address, a row kPitchC cells on.
  auto compute = [&](int buf, int i0, int i1) {
    uint32_t a_row = a_lane + (buf * halo_words + i0 * kPitchC * kCellWords) * 4;
    const uint32_t* brow = wb + buf * wb_words + lane * BW + i0 * sg.uw * kPerO;
    for (int i = i0; i < i1; ++i, a_row += kPitchC * kCellWords * 4, brow += sg.uw * kPerO) {
      uint32_t a_o = a_row;
      const uint32_t* bsrc = brow;
      for (int j = 0; j < sg.uw; ++j, a_o += kCellWords * 4, bsrc += kPerO)
#pragma unroll
      for (int ks = 0; ks < KS; ++ks) {
        uint32_t b[NT][2];
        if constexpr (NT == 2) {
          const uint4 q = *reinterpret_cast<const uint4*>(bsrc + ks * kPerK);
          b[0][0] = q.x;
          b[0][1] = q.y;
          b[1][0] = q.z;
          b[1][1] = q.w;
        } else {
          const uint2 q = *reinterpret_cast<const uint2*>(bsrc + ks * kPerK);
          b[0][0] = q.x;
          b[0][1] = q.y;
        }
        uint32_t a[2][4];
#pragma unroll
        for (int mi = 0; mi < 2; ++mi) ldsm_x4(a[mi], a_o + (mi * 16 * kCellWords + 8 * ks) * 4);
        if constexpr (kStrict) {
          uint32_t bh[NT][2], blo[NT][2];
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int e = 0; e < 2; ++e) split_tf32(b[nt][e], bh[nt][e], blo[nt][e]);
#pragma unroll
          for (int mi = 0; mi < 2; ++mi) {
            uint32_t ah[4], alo[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) split_tf32(a[mi][e], ah[e], alo[e]);
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) {  // small products first (3xTF32)
              Mma<float>::run(acc[mi][nt], alo, bh[nt]);
              Mma<float>::run(acc[mi][nt], ah, blo[nt]);
              Mma<float>::run(acc[mi][nt], ah, bh[nt]);
            }
          }
        } else {
#pragma unroll
          for (int mi = 0; mi < 2; ++mi)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) Mma<T>::run(acc[mi][nt], a[mi], b[nt]);
        }
      }
    }
  };

  __syncthreads();  // the tap table is in
#pragma unroll
  for (int m = 0; m < kBSlots; ++m) {
    const int o = (tid + m * kThreads) / kPerO;
    btap[m] = o < sg.u ? toff[o * NP + bn] : -1;
  }
  for (int h = 0; h < 2; ++h) {
    load_a(0, h);
    store_a(0, h);
  }
  stage_b(0, 0);
  __syncthreads();
  const int ihalf = sg.uh / 2;  // the first half-chunk's offset rows (none where uh == 1)
  for (int kc = 0; kc < sg.nchunks; ++kc) {
    const bool more = kc + 1 < sg.nchunks;
    const int nbuf = (kc + 1) & 1;  // the buffer every warp finished reading before the last barrier
    if (more) load_a(kc + 1, 0);  // in flight under half of this chunk's mma
    compute(kc & 1, 0, ihalf);
    if (more) {
      store_a(nbuf, 0);
      load_a(kc + 1, 1);
    }
    compute(kc & 1, ihalf, sg.uh);
    if (more) {
      store_a(nbuf, 1);
      stage_b(kc + 1, nbuf);
    }
    __syncthreads();
  }

  // Accumulator (cell g or g + 8 of m-tile mi, outputs 2t and 2t + 1 of n-tile nt) to output (s a + r - c, s b + q - c)
  // of its channel; rows and columns outside the output (the first cells' before a shift, the last cells' where the
  // stride does not divide) are dropped.
  const int gq = lane >> 2, t = lane & 3;
  const int64_t plane = int64_t(sg.hout) * sg.wout;
  T* yb = y + (img * p.Cout + int64_t(grp) * sg.cout_g) * plane;
  int64_t noff[NT][2];
  int nr[NT][2], nq[NT][2];
  float nb[NT][2];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int n = 8 * nt + 2 * t + e, ss = sg.sh * sg.sw, co = n / ss, r = n - co * ss, ph = r / sg.sw;
      const bool ok = n < sg.n;
      nr[nt][e] = ok ? ph : -(1 << 30);  // an output row no cell has
      nq[nt][e] = r - ph * sg.sw;
      noff[nt][e] = int64_t(co) * plane + int64_t(ph) * sg.wout + nq[nt][e];
      nb[nt][e] = ok && bias != nullptr ? static_cast<float>(bias[int64_t(grp) * sg.cout_g + co]) : 0.f;
    }
  const int oh = (a0 + warp) * sg.sh - sg.ch;
#pragma unroll
  for (int mi = 0; mi < 2; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int ow = (b0 + mi * 16 + gq + 8 * h) * sg.sw - sg.cw;
      const int64_t cell = int64_t(oh) * sg.wout + ow;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          // Unsigned: a shifted first cell's outputs before row or column 0 are dropped too.
          if (unsigned(oh + nr[nt][e]) < unsigned(sg.hout) && unsigned(ow + nq[nt][e]) < unsigned(sg.wout))
            yb[cell + noff[nt][e]] = static_cast<T>(acc[mi][nt][2 * h + e] + nb[nt][e]);
    }
  }
}

int smem_bytes(const CellsGeom& sg, int nt, int ks) {
  return 4 * (2 * sg.hr * kPitchC * cell_words(ks) + 2 * sg.u * ks * 64 * nt + sg.u * 8 * nt);
}

template <typename T, bool kStrict>
void launch_typed(const ConvTParams& p, CellsGeom& sg, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                  at::Tensor& out, int ks, cudaStream_t stream) {
  const int kc = (sizeof(T) == 2 ? 16 : 8) * ks;
  sg.nchunks = static_cast<int>((p.Cin_g + kc - 1) / kc);
  if (sg.blocks == 0) return;
  const T* bp = b.defined() ? b.const_data_ptr<T>() : nullptr;
  auto go = [&](auto kernel, int nt) {
    const int bytes = smem_bytes(sg, nt, ks);
    allow_dynamic_smem(kernel, bytes);
    kernel<<<static_cast<unsigned>(sg.blocks), kThreads, bytes, stream>>>(p, sg, x.const_data_ptr<T>(),
                                                                          w.const_data_ptr<T>(), bp,
                                                                          out.mutable_data_ptr<T>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  };
  if (sg.n <= 8) {
    if (ks == 2) {
      go(convt_cells_kernel<T, kStrict, 1, 2>, 1);
    } else {
      go(convt_cells_kernel<T, kStrict, 1, 1>, 1);
    }
  } else if (ks == 2) {
    go(convt_cells_kernel<T, kStrict, 2, 2>, 2);
  } else {
    go(convt_cells_kernel<T, kStrict, 2, 1>, 2);
  }
}

}  // namespace

bool cells_supports(const ConvTParams& p, const at::Tensor& x) {
  const at::ScalarType dt = x.scalar_type();
  if (dt != at::kHalf && dt != at::kBFloat16 && dt != at::kFloat) return false;
  CellsGeom sg;
  return geometry(p, sg, resident_blocks(x));
}

void launch_cells(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                  bool tf32, int ksteps, cudaStream_t stream) {
  CONVT_CHECK(ksteps >= 0 && ksteps <= 2, "convt: the cells kernel stages 1 or 2 k-steps a chunk, not ", ksteps);
  CellsGeom sg;
  CONVT_CHECK(geometry(p, sg, resident_blocks(x)), "convt: the cells kernel does not take this shape");
  // Two k-steps a chunk halve the chunks' barriers and exposed load latencies, but where they pad the last chunk past
  // what one k-step a chunk pads, the padding's mma costs more (GPU time alone, H200, one against two: dcgan-64-3-n64,
  // 64 channels, TF32 25.2 -> 23.5 us, fp16 18.5 -> 17.6; fsrcnn-56-1-n1, 56 channels, TF32 28.0 -> 31.8, fp16 20.3
  // -> 20.4).
  const int64_t kc1 = x.element_size() == 2 ? 16 : 8;
  const bool no_pad = (p.Cin_g + 2 * kc1 - 1) / (2 * kc1) * 2 == (p.Cin_g + kc1 - 1) / kc1;
  const int ks = ksteps != 0 ? ksteps : no_pad ? 2 : 1;
  switch (x.scalar_type()) {
    case at::kFloat:
      if (tf32) {
        launch_typed<float, false>(p, sg, x, w, b, out, ks, stream);
      } else {
        launch_typed<float, true>(p, sg, x, w, b, out, ks, stream);
      }
      break;
    case at::kHalf: launch_typed<at::Half, false>(p, sg, x, w, b, out, ks, stream); break;
    case at::kBFloat16: launch_typed<at::BFloat16, false>(p, sg, x, w, b, out, ks, stream); break;
    default: TORCH_CHECK(false, "convt: the cells kernel takes float32, float16 and bfloat16");
  }
}

}  // namespace convt
