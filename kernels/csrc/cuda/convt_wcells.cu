// The wgmma cells path (see convt_wcells.h). A block is one warpgroup and owns four 8 x 8-cell m-tiles of one image
// and group: 8 cell rows x 32 columns (rows = 8) or 16 x 16 (rows = 16). Per chunk of input channels (8 fp32 as TF32,
// 16 half: one wgmma k-step), it stages
//   - the input rows and columns its cells' offsets reach, channel-last: two planes (the chunk's two 16-byte k-cores)
//     of [halo row][halo column] x 16 bytes. wgmma's K-major layout without swizzle reads a core matrix as 8 rows of
//     16 bytes at consecutive addresses and the next 8 rows `SBO` bytes on: 8 cells of one row, then the next cell
//     row at the halo's pitch. So an m-tile at offset (i, j) is the descriptor of its first cell moved by i rows and j
//     columns, and every offset reads the same staged copy;
// then issues offsets x 4 m64n16 wgmma (FSRCNN: 9 x 4 a chunk) and stages the next chunk into the other buffer
// while they run. B, the weights, is every chunk's, staged once a block: per (chunk, offset) [k-core][a cell's output
// n (16)][16 bytes], zero where a phase has no tap at that offset (or n is padding). The global loads, a 16-byte unit's 4 or 8 channels of one pixel, are rounded to TF32 (fp32) or
// packed (half types) on their way to shared memory, once. Each output is written once, by the thread whose
// accumulator holds it.
#include "convt_wcells.h"

#include <c10/cuda/CUDAException.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cells_axis.h"
#include "convt_tc.h"
#include "smem_attr.h"
#include "wgmma_ops.h"

namespace convt {
namespace {

#include "mma_sync.cuh"
#include "wg_ptx.cuh"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// st.shared's writes ordered before the async proxy's reads (wgmma's descriptors).
__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
#endif

constexpr int kThreads = 128;  // one warpgroup
constexpr int kTiles = 4;      // m-tiles a block, 8 x 8 cells each
constexpr int kMaxOff = 16;    // input offsets in all: a chunk's weights are kMaxOff x 512 bytes at most
constexpr int kMaxUnits = 8;   // 16-byte halo units a thread a chunk (host-checked)
constexpr int kMaxWeightBytes = 64 * 1024;  // every chunk's weights, staged once a block

struct WcGeom {
  int hin, win, hout, wout;
  int sh, sw, ch, cw;    // stride, and the cells' shift (cell a's first output row is sh a - ch)
  int da0, db0, uh, uw;  // the least input offset a axis (cell a, offset i reads input row a + da0 + i), and how many
  int cin_g, cout_g, n;  // n: a cell's outputs, Cout/g x sh x sw
  int kw, kk, chunks;
  int hr, hcw, plane;    // halo rows, columns (the pitch), and pixels a k-core plane
  int units, nu;         // 16-byte units a chunk's halo (two planes), and a thread's
  int a_bytes, smem_bytes;  // a chunk's halo (two buffers), and every chunk's weights after them
  int tiles_r, tiles_c;
  int8_t th[kAxisMaxS * kAxisMaxU], tw[kAxisMaxS * kAxisMaxU];  // the tap of phase r at offset i, or -1
};

template <typename T, int MR>
__global__ void __launch_bounds__(kThreads, 4)
    convt_wcells_kernel(const WcGeom g, int64_t cin, int64_t cout, const T* __restrict__ x, const T* __restrict__ w,
                        const T* __restrict__ bias, T* __restrict__ y) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int MC = kTiles / MR;
  constexpr bool kHalf = sizeof(T) == 2;
  constexpr int kE = kHalf ? 8 : 4;        // channels a 16-byte k-core
  constexpr int kK = 2 * kE;               // channels a chunk
  constexpr int kBatch = kHalf ? 4 : 8;    // halo units whose loads are in flight at once (32 registers)
  using Op = typename wg::OpFor<T>::type;
  using Bits = std::conditional_t<kHalf, uint16_t, uint32_t>;
  extern __shared__ __align__(128) uint4 sm[];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
  const int img = blockIdx.y, grp = blockIdx.z;
  const int tr = static_cast<int>(blockIdx.x) / g.tiles_c, tc = static_cast<int>(blockIdx.x) - tr * g.tiles_c;
  const int a0 = tr * 8 * MR, b0 = tc * 8 * MC;  // the block's first cell row and column

  // Halo unit u (plane u / plane, halo row and column from the rest) is the 16 bytes of channels kE k2 .. of one
  // pixel. Every load's address is legal (clamped into the image and the group's channels) and its value masked, so
  // the loads carry no branch: uoff is the unit's first channel plane and pixel; bit m of uk2 its k-core, of uin
  // whether its pixel is inside the image.
  const unsigned hw = unsigned(g.hin) * unsigned(g.win);
  const Bits* src = opaque(reinterpret_cast<const Bits*>(x) + (int64_t(img) * cin + int64_t(grp) * g.cin_g) * hw);
  unsigned uoff[kMaxUnits];
  unsigned uk2 = 0, uin = 0;
#pragma unroll
  for (int m = 0; m < kMaxUnits; ++m) {
    const int u = min(tid + m * kThreads, g.units - 1);
    const int k2 = u >= g.plane ? 1 : 0, q = u - k2 * g.plane, r = q / g.hcw, c = q - r * g.hcw;
    const int iy = a0 + g.da0 + r, ix = b0 + g.db0 + c;
    if (iy >= 0 && iy < g.hin && ix >= 0 && ix < g.win) uin |= 1u << m;
    uk2 |= unsigned(k2) << m;
    uoff[m] = unsigned(min(k2 * kE, g.cin_g - 1)) * hw + unsigned(min(max(iy, 0), g.hin - 1)) * unsigned(g.win) +
              unsigned(min(max(ix, 0), g.win - 1));
  }

  // Four 32-bit words of a 16-byte k-core: TF32-rounded fp32, or half-type pairs.
  auto store16 = [&](uint8_t* dst, const uint32_t* v) {
    uint32_t word[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if constexpr (kHalf) word[e] = v[2 * e] | v[2 * e + 1] << 16;
      else word[e] = tf32_bits(v[e]);
    }
    *reinterpret_cast<uint4*>(dst) = make_uint4(word[0], word[1], word[2], word[3]);
  };

  // Every chunk's weights, once a block, after the halo buffers: (chunk, offset o) is [k-core][output n][16 bytes].
  // Row (c, o, n) is column (output channel, kh, kw) of the group's [input channel][Cout/g x KH x KW] at channels
  // kK c .., or zero where phase (r, q) of n has no tap at offset o, n is padding, or a channel is past the group's.
  const int ncol = g.cout_g * g.kk, per_co = g.sh * g.sw, noffs = g.uh * g.uw;
  uint8_t* wbuf = reinterpret_cast<uint8_t*>(sm) + 2 * g.a_bytes;
  {
    const Bits* wsrc = opaque(reinterpret_cast<const Bits*>(w) + int64_t(grp) * g.cin_g * ncol);
    const int rows = g.chunks * noffs * 16;
    for (int row = tid; row < rows; row += kThreads) {
      const int co_n = row & 15, oc = row >> 4, c = oc / noffs, o = oc - c * noffs;
      const int i = o / g.uw, j = o - i * g.uw, co = co_n / per_co, rest = co_n - co * per_co, r = rest / g.sw;
      const int q = rest - r * g.sw;
      const int kh = co_n < g.n ? g.th[r * kAxisMaxU + i] : -1, kwj = co_n < g.n ? g.tw[q * kAxisMaxU + j] : -1;
      const bool ok = kh >= 0 && kwj >= 0;
      const unsigned col = ok ? unsigned(co * g.kk + kh * g.kw + kwj) : 0u;
      uint32_t v[kK];
#pragma unroll
      for (int k = 0; k < kK; ++k) {
        const int ch = c * kK + k;
        const uint32_t val = __ldg(wsrc + (unsigned(min(ch, g.cin_g - 1)) * unsigned(ncol) + col));
        v[k] = ok && ch < g.cin_g ? val : 0u;
      }
      uint8_t* dst = wbuf + oc * 512 + co_n * 16;
      store16(dst, v);
      store16(dst + 256, v + kE);
    }
  }

  // Chunk c (channels kK c ..) of the halo into buffer b, kBatch units' loads in flight at once. FULL: every channel
  // of the chunk is the group's (no clamp or mask by channel).
  auto stage_as = [&](auto full_c, int c, int b) {
    constexpr bool kFull = decltype(full_c)::value;
    uint8_t* buf = reinterpret_cast<uint8_t*>(sm) + b * g.a_bytes;
    const int cb = c * kK;
#pragma unroll
    for (int m0 = 0; m0 < kMaxUnits; m0 += kBatch) {
      if (m0 < g.nu) {
        uint32_t v[kBatch][kE];
#pragma unroll
        for (int m = 0; m < kBatch; ++m) {
          const bool in = (uin >> (m0 + m)) & 1u;
          const int k0 = (uk2 >> (m0 + m)) & 1u ? kE : 0;  // the unit's first channel in the chunk
#pragma unroll
          for (int e = 0; e < kE; ++e) {
            // uoff holds channel min(k0, cin_g - 1); this load reads channel cb + k0 + e, clamped
            const int ch = cb + k0 + e;
            const unsigned off =
                kFull ? uoff[m0 + m] + unsigned(cb + e) * hw
                      : uoff[m0 + m] + unsigned(min(ch, g.cin_g - 1) - min(k0, g.cin_g - 1)) * hw;
            const uint32_t val = __ldg(src + off);
            v[m][e] = in && (kFull || ch < g.cin_g) ? val : 0u;
          }
        }
#pragma unroll
        for (int m = 0; m < kBatch; ++m) {
          const int u = tid + (m0 + m) * kThreads;
          if (m0 + m < g.nu && u < g.units) store16(buf + u * 16, v[m]);
        }
      }
    }
  };
  auto stage = [&](int c, int b) {
    if ((c + 1) * kK <= g.cin_g) stage_as(std::true_type{}, c, b);
    else stage_as(std::false_type{}, c, b);
  };

  float acc[kTiles][8];
  zero_acc(acc);
  stage(0, 0);
  fence_async_smem();
  __syncthreads();

  // Descriptors (wg_ptx.cuh): A's k-cores a plane apart, its 8-cell row groups a halo row apart; B's k-cores 256
  // bytes apart, its n groups 128. Offsets are added to the low word in 16-byte units.
  const uint32_t s0 = smem_addr(sm);
  const uint32_t a_hi = uint32_t(g.hcw), b_hi = 128u >> 4;
  const uint32_t a_lo = desc_lo(s0, g.plane * 16), b_lo = desc_lo(s0 + 2u * uint32_t(g.a_bytes), 256);
  for (int c = 0; c < g.chunks; ++c) {
    const uint32_t boff = uint32_t(c & 1) * uint32_t(g.a_bytes >> 4);
    wgmma_fence();
    for (int i = 0; i < g.uh; ++i) {
      for (int j = 0; j < g.uw; ++j) {
        const uint64_t db = desc_words(b_hi, b_lo + uint32_t((c * noffs + i * g.uw + j) * 32));
        const uint32_t at = a_lo + boff + uint32_t(i * g.hcw + j);
#pragma unroll
        for (int mt = 0; mt < kTiles; ++mt) {
          const int mr = mt / MC, mc = mt - mr * MC;
          wg::Wgmma<Op, 16>::run(acc[mt], desc_words(a_hi, at + uint32_t(8 * mr * g.hcw + 8 * mc)), db, 1);
        }
      }
    }
    wgmma_commit();
    if (c + 1 < g.chunks) {
      stage(c + 1, (c + 1) & 1);  // the other buffer: chunk c - 1's, retired before the last barrier
      fence_async_smem();
    }
    wgmma_wait<0>();
    __syncthreads();  // chunk c's buffer read by every wgmma, chunk c + 1's written by every thread
  }
#pragma unroll
  for (int mt = 0; mt < kTiles; ++mt) fence_regs(acc[mt]);

  // Accumulator 4 j + 2 h + e of m-tile mt: cell row 2 warp + h, column gq of the tile; output n = 8 j + 2 tq + e,
  // which is output channel n / (sh sw), phase (r, q): output (sh a - ch + r, sw b - cw + q).
  const unsigned oplane = unsigned(g.hout) * unsigned(g.wout);
  T* yg = y + (int64_t(img) * cout + int64_t(grp) * g.cout_g) * int64_t(oplane);
  int dy[4], dx[4];
  bool nok[4];
  unsigned noff[4];
  float nb[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int n = 8 * (k >> 1) + 2 * tq + (k & 1);
    const int co = n / per_co, rest = n - co * per_co, r = rest / g.sw, q = rest - r * g.sw;
    nok[k] = n < g.n;
    dy[k] = r - g.ch;
    dx[k] = q - g.cw;
    noff[k] = unsigned(co) * oplane;
    nb[k] = n < g.n && bias != nullptr ? static_cast<float>(bias[int64_t(grp) * g.cout_g + co]) : 0.f;
  }
#pragma unroll
  for (int mt = 0; mt < kTiles; ++mt) {
    const int mr = mt / MC, mc = mt - mr * MC;
    const int b = b0 + 8 * mc + gq;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int a = a0 + 8 * mr + 2 * warp + h;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int oy = g.sh * a + dy[k], ox = g.sw * b + dx[k];
        if (nok[k] && oy >= 0 && oy < g.hout && ox >= 0 && ox < g.wout)
          yg[noff[k] + unsigned(oy) * unsigned(g.wout) + unsigned(ox)] =
              static_cast<T>(acc[mt][4 * (k >> 1) + 2 * h + (k & 1)] + nb[k]);
      }
    }
  }
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
}

// False where the shape is outside the kernel's limits (convt_wcells.h). Each axis takes the shift whose taps read
// the fewest offsets.
bool geometry(const ConvTParams& p, int elem, int rows, WcGeom& g) {
  const int64_t n = p.Cout_g * p.sh * p.sw;
  if (n > 16 || p.KH > 127 || p.KW > 127) return false;
  AxisCells ah[2], aw[2];
  const int nh = axis_candidates(p.sh, p.ph, p.dh, p.KH, ah), nw = axis_candidates(p.sw, p.pw, p.dw, p.KW, aw);
  if (nh == 0 || nw == 0) return false;
  const AxisCells &h = ah[nh - 1], &wa = aw[nw - 1];
  if (h.u * wa.u > kMaxOff) return false;
  const int64_t lim = int64_t(1) << 31;
  if (p.Cin_g * p.Hin * p.Win >= lim || p.Cout_g * p.Hout * p.Wout >= lim || (p.Cin_g + 16) * p.Cout_g * p.KH * p.KW >= lim)
    return false;
  const int mr = rows / 8, mc = kTiles / mr;
  const int64_t hc = (p.Hout + h.c + p.sh - 1) / p.sh, wc = (p.Wout + wa.c + p.sw - 1) / p.sw;
  const int64_t tiles_r = (hc + 8 * mr - 1) / (8 * mr), tiles_c = (wc + 8 * mc - 1) / (8 * mc);
  if (tiles_r * tiles_c >= lim) return false;
  g.hr = 8 * mr + h.u - 1;
  g.hcw = 8 * mc + wa.u - 1;
  g.plane = g.hr * g.hcw;
  g.units = 2 * g.plane;
  g.nu = (g.units + kThreads - 1) / kThreads;
  if (g.nu > kMaxUnits) return false;
  g.a_bytes = g.units * 16;
  g.hin = static_cast<int>(p.Hin);
  g.win = static_cast<int>(p.Win);
  g.hout = static_cast<int>(p.Hout);
  g.wout = static_cast<int>(p.Wout);
  g.sh = static_cast<int>(p.sh);
  g.sw = static_cast<int>(p.sw);
  g.ch = h.c;
  g.cw = wa.c;
  g.da0 = h.d0;
  g.db0 = wa.d0;
  g.uh = h.u;
  g.uw = wa.u;
  g.cin_g = static_cast<int>(p.Cin_g);
  g.cout_g = static_cast<int>(p.Cout_g);
  g.n = static_cast<int>(n);
  g.kw = static_cast<int>(p.KW);
  g.kk = static_cast<int>(p.KH * p.KW);
  const int kk = elem == 2 ? 16 : 8;
  g.chunks = static_cast<int>((p.Cin_g + kk - 1) / kk);
  if (int64_t(g.chunks) * h.u * wa.u * 512 > kMaxWeightBytes) return false;
  g.smem_bytes = 2 * g.a_bytes + g.chunks * h.u * wa.u * 512;
  g.tiles_r = static_cast<int>(tiles_r);
  g.tiles_c = static_cast<int>(tiles_c);
  std::copy(h.tab, h.tab + kAxisMaxS * kAxisMaxU, g.th);
  std::copy(wa.tab, wa.tab + kAxisMaxS * kAxisMaxU, g.tw);
  return true;
}

// The tile that stages fewer halo pixels in all (blocks x halo), 8 x 32 cells on a tie.
int pick_rows(const ConvTParams& p, int elem) {
  WcGeom a, b;
  const bool ok8 = geometry(p, elem, 8, a), ok16 = geometry(p, elem, 16, b);
  if (!ok16) return 8;
  if (!ok8) return 16;
  return int64_t(b.tiles_r) * b.tiles_c * b.plane < int64_t(a.tiles_r) * a.tiles_c * a.plane ? 16 : 8;
}

template <typename T>
void launch_typed(const ConvTParams& p, const WcGeom& g, int rows, const at::Tensor& x, const at::Tensor& w,
                  const at::Tensor& b, at::Tensor& out, cudaStream_t stream) {
  if (p.N == 0 || p.groups == 0 || g.hout == 0 || g.wout == 0) return;
  const T* bp = b.defined() ? b.const_data_ptr<T>() : nullptr;
  auto go = [&](auto kernel) {
    const int bytes = g.smem_bytes;
    allow_dynamic_smem(kernel, bytes);
    const dim3 grid(static_cast<unsigned>(g.tiles_r * g.tiles_c), static_cast<unsigned>(p.N),
                    static_cast<unsigned>(p.groups));
    kernel<<<grid, kThreads, bytes, stream>>>(g, p.Cin, p.Cout, x.const_data_ptr<T>(), w.const_data_ptr<T>(), bp,
                                              out.mutable_data_ptr<T>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  };
  if (rows == 16) go(convt_wcells_kernel<T, 2>);
  else go(convt_wcells_kernel<T, 1>);
}

}  // namespace

bool wcells_supports(const ConvTParams& p, const at::Tensor& x, bool tf32, int rows) {
  const at::ScalarType dt = x.scalar_type();
  if (dt != at::kHalf && dt != at::kBFloat16 && !(dt == at::kFloat && tf32)) return false;
  if (p.groups > 65535 || p.N > 65535) return false;  // grid.z, grid.y
  const int elem = static_cast<int>(x.element_size());
  WcGeom g;
  if (!geometry(p, elem, rows == 8 || rows == 16 ? rows : pick_rows(p, elem), g)) return false;
  return wg_available(x.get_device());
}

void launch_wcells(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                   at::Tensor& out, int rows, cudaStream_t stream) {
  const int elem = static_cast<int>(x.element_size());
  if (rows != 8 && rows != 16) rows = pick_rows(p, elem);
  WcGeom g;
  CONVT_CHECK(geometry(p, elem, rows, g), "convt: the wgmma cells kernel does not take this shape");
  switch (x.scalar_type()) {
    case at::kFloat: launch_typed<float>(p, g, rows, x, w, b, out, stream); break;
    case at::kHalf: launch_typed<at::Half>(p, g, rows, x, w, b, out, stream); break;
    case at::kBFloat16: launch_typed<at::BFloat16>(p, g, rows, x, w, b, out, stream); break;
    default: TORCH_CHECK(false, "convt: the wgmma cells kernel takes float32 (as TF32), float16 and bfloat16");
  }
}

}  // namespace convt
