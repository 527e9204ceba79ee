// The taps path (see convt_taps.h). A unit is 8 input rows x 16 input columns of one image and group: each of a
// block's 8 warps multiplies one row's 16 pixels (one m16 tile) by the group's weights, NT n8 tiles of (output
// channel, kernel row, kernel column) columns, over the input channels on mma.sync (m16n8k8 TF32, m16n8k16 half), and
// stores the products to shared memory P. The unit's outputs are the cells (cells_axis.h: the s x s outputs one input
// position starts, shifted so their taps read the fewest offsets) whose offsets all land in it: 8 - uh + 1 cell rows x
// 16 - uw + 1 cell columns, each output the sum of its taps' products, read from P through a (phase, offset) table.
// Blocks are persistent over units; the weights are staged once a block as B fragments (TF32-rounded), and a unit's
// input is loaded into registers while the unit before it computes, then staged channel-major ([channel][row][pixel]
// at a pitch of 136: a TF32 fragment's 4 channels x 8 pixels hit 32 banks; ldmatrix.trans's 8 channel rows, 272
// bytes apart, hit 8 bank groups).
#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cells_axis.h"
#include "convt_taps.h"
#include "smem_attr.h"

namespace convt {
namespace {

#include "mma_sync.cuh"

constexpr int kThreads = 256;
constexpr int kRows = 8;                  // input rows a unit: a warp each
constexpr int kPx = 16;                   // input columns a unit: one m16 tile
constexpr int kMaxKPad = 64;              // input channels a group, padded to the k-step
constexpr int kCP = kRows * kPx + 8;      // staged elements a channel
constexpr int kPre = kMaxKPad * kRows * kPx / kThreads;  // a thread's staged elements a unit, at most
constexpr int kMaxTab = 1024;             // (phase, offset) entries
constexpr int kRegTaps = 9;               // a col2im thread's tap offsets held in registers (3 x 3 offsets)

struct TapsGeom {
  int hin, win, hout, wout;
  int sh, sw, ch, cw;    // stride, and the cells' shift (cell a's first output row is sh a - ch)
  int da0, db0, uh, uw;  // the least input offset a axis, and how many
  int cin_g, cout_g, nc, kw, kk, kpad;
  int pp;                // floats a pixel's products in P: 8 NT, rounded up to 8 past a multiple of 32
  int emit, sc;          // cell rows and columns a unit owns: kRows - uh + 1, kPx - uw + 1
  int strips, steps;     // units along an image's cell columns and rows
  int units;             // a group's: N x steps x strips
  int ntab;              // sh x sw phases x uh x uw offsets
  int8_t th[kAxisMaxS * kAxisMaxU], tw[kAxisMaxS * kAxisMaxU];  // the tap of phase r at offset i, or -1
};

struct Unit {
  int img, a0, b0;  // image, first cell row, first cell column
};

__device__ __forceinline__ Unit unit_of(const TapsGeom& g, int u) {
  const int per = g.steps * g.strips, img = u / per, rem = u - img * per, step = rem / g.strips;
  return {img, step * g.emit, (rem - step * g.strips) * g.sc};
}

template <typename T, int NT>
__global__ void __launch_bounds__(kThreads, 2)
    convt_taps_kernel(const ConvTParams p, const TapsGeom g, const T* __restrict__ x, const T* __restrict__ w,
                      const T* __restrict__ bias, T* __restrict__ y) {
  constexpr bool kHalf = sizeof(T) == 2;
  constexpr int kK = kHalf ? 16 : 8;  // channels a k-step
  using Bits = std::conditional_t<kHalf, uint16_t, uint32_t>;
  extern __shared__ __align__(16) uint32_t sm[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, grp = blockIdx.y;
  const int ksteps = g.kpad / kK;
  uint32_t* wb = sm;                                               // [k-step][nt][lane][2]: B fragments
  float* pbuf = reinterpret_cast<float*>(wb + ksteps * NT * 64);   // [row][pixel][pp]
  int* tab = reinterpret_cast<int*>(pbuf + kRows * kPx * g.pp);    // [phase][offset]: a product's P offset, or -1
  Bits* sin = reinterpret_cast<Bits*>(tab + ((g.ntab + 3) & ~3));  // [channel][row][pixel], pitch kCP

  const Bits* wg = reinterpret_cast<const Bits*>(w) + int64_t(grp) * g.cin_g * g.nc;
  for (int e = tid; e < ksteps * NT * 64; e += kThreads) {
    // m16n8k8 TF32: b0/b1 hold k t / t + 4 of column g; m16n8k16: the pairs at k 2t / 2t + 8.
    const int wd = e & 1, l = (e >> 1) & 31, nt = (e >> 6) % NT, ks = (e >> 6) / NT;
    const int col = nt * 8 + (l >> 2), t = l & 3;
    uint32_t v;
    if constexpr (kHalf) {
      const int k = ks * 16 + 2 * t + 8 * wd;
      const uint32_t lo = k < g.cin_g && col < g.nc ? wg[int64_t(k) * g.nc + col] : 0u;
      const uint32_t hi = k + 1 < g.cin_g && col < g.nc ? wg[int64_t(k + 1) * g.nc + col] : 0u;
      v = lo | hi << 16;
    } else {
      const int k = ks * 8 + t + 4 * wd;
      v = tf32_bits(k < g.cin_g && col < g.nc ? wg[int64_t(k) * g.nc + col] : 0u);
    }
    wb[e] = v;
  }
  // The col2im's table: per phase (r, q), the P offsets of its taps' products, compacted to the front of its row
  // (uh x uw entries) in (i, j) order, then -1s.
  for (int pq = tid; pq < g.sh * g.sw; pq += kThreads) {
    const int r = pq / g.sw, q = pq - r * g.sw, uu = g.uh * g.uw;
    int n = 0;
    for (int i = 0; i < g.uh; ++i)
      for (int j = 0; j < g.uw; ++j) {
        const int kh = g.th[r * kAxisMaxU + i], kw = g.tw[q * kAxisMaxU + j];
        if (kh >= 0 && kw >= 0) tab[pq * uu + n++] = (i * kPx + j) * g.pp + kh * g.kw + kw;
      }
    while (n < uu) tab[pq * uu + n++] = -1;
  }

  // Staging: a thread owns pixel tid % 16 of unit row (tid / 16) % 8, channels tid / 128 + 2 m, m < kPre. Every
  // slot is loaded (as zero past the group's channels or outside the image: one guard a unit, not one a load) and
  // stored, so the loops have no branches, and a load's address is one 32-bit offset from an opaque base (Cin/g x H x
  // W < 2^31, taps_supports).
  const int spx = tid & 15, srow = (tid >> 4) & 7, sch = tid >> 7;
  const unsigned hw2 = 2u * unsigned(g.hin) * unsigned(g.win);
  uint32_t pre[kPre];
  auto load_unit = [&](int u) {
    bool ok = u < g.units;
    const Unit un = unit_of(g, ok ? u : 0);
    const int iy = un.a0 + g.da0 + srow, ix = un.b0 + g.db0 + spx;
    ok = ok && iy >= 0 && iy < g.hin && ix >= 0 && ix < g.win;
    const int nval = ok ? (g.cin_g - sch + 1) / 2 : 0;  // slots m < nval hold channels of the group
    const Bits* src = opaque(reinterpret_cast<const Bits*>(x) +
                             (int64_t(un.img) * p.Cin + int64_t(grp) * g.cin_g) * (hw2 / 2));
    const unsigned off = ok ? unsigned(sch) * (hw2 / 2) + unsigned(iy) * unsigned(g.win) + unsigned(ix) : 0u;
#pragma unroll
    for (int m = 0; m < kPre; ++m) pre[m] = m < nval ? uint32_t(__ldg(src + (off + unsigned(m) * hw2))) : 0u;
  };
  // TF32 rounding here, not as loaded: the loads are in flight under a unit's products, and an instruction that
  // used them there would wait for them.
  Bits* sdst = sin + sch * kCP + srow * kPx + spx;
  auto store_unit = [&]() {
#pragma unroll
    for (int m = 0; m < kPre; ++m) sdst[2 * m * kCP] = static_cast<Bits>(kHalf ? pre[m] : tf32_bits(pre[m]));
  };

  // The col2im: a thread owns one output column oc of the unit's run (cells' columns x sw phases) in one height
  // phase r, and every lanes_per-th of the (output channel, cell row) pairs there. Its phase is fixed, so its taps'
  // P offsets are too: up to kRegTaps of them in registers, the rest of the table read as it goes.
  const int run = g.sc * g.sw, lanes = g.sh * run, lanes_per = kThreads / lanes;
  const int sub = tid / lanes, rq = tid - sub * lanes, r = rq / run, oc = rq - r * run;
  const int bl = oc / g.sw, q = oc - bl * g.sw, uu = g.uh * g.uw, rows = g.cout_g * g.emit;
  const unsigned plane = unsigned(g.hout) * unsigned(g.wout);

  __syncthreads();  // the table
  const int* tab_row = tab + (r * g.sw + q) * uu;  // (only read where sub < lanes_per: r, q in range)
  int toff[kRegTaps];
  int ntap = 0, ntap_all = 0;
  if (sub < lanes_per) {
    while (ntap_all < uu && tab_row[ntap_all] >= 0) ++ntap_all;
    ntap = ntap_all < kRegTaps ? ntap_all : kRegTaps;
  }
#pragma unroll
  for (int m = 0; m < kRegTaps; ++m) toff[m] = m < ntap ? tab_row[m] : 0;

  const int gq = lane >> 2, t = lane & 3;
  int u = blockIdx.x;
  load_unit(u);
  for (; u < g.units; u += gridDim.x) {
    __syncthreads();  // the unit before: its products done reading the input, its col2im done reading P
    store_unit();
    __syncthreads();
    load_unit(u + gridDim.x);  // in flight under this unit's products and sums

    float acc[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[nt][e] = 0.f;
    const uint2* bp = reinterpret_cast<const uint2*>(wb) + lane;
#pragma unroll 2
    for (int ks = 0; ks < ksteps; ++ks) {
      uint32_t a[4];
      if constexpr (kHalf) {
        // ldmatrix.trans: matrix li is channels (li / 2) * 8.. x pixels (li % 2) * 8.., so thread (g, t) gets the
        // channel pair 2t, 2t + 1 of pixel g: a0..a3 of m16n8k16's A.
        const int li = lane >> 3, r8 = lane & 7;
        ldmatrix_x4_trans(a, sin + (ks * 16 + (li >> 1) * 8 + r8) * kCP + warp * kPx + (li & 1) * 8);
      } else {
        // m16n8k8 TF32: a0 (pixel g, channel t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4).
        const uint32_t* ap = sin + (ks * 8 + t) * kCP + warp * kPx + gq;
        a[0] = ap[0];
        a[1] = ap[8];
        a[2] = ap[4 * kCP];
        a[3] = ap[4 * kCP + 8];
      }
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const uint2 bv = bp[(ks * NT + nt) * 32];
        const uint32_t b[2] = {bv.x, bv.y};
        Mma<T>::run(acc[nt], a, b);
      }
    }
    // Accumulator (pixel g or g + 8, columns 2t and 2t + 1 of n-tile nt) to P: pp is 8 past a multiple of 32, so a
    // warp's float2 stores fill two wavefronts.
    float* prow = pbuf + (warp * kPx + gq) * g.pp + 2 * t;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      *reinterpret_cast<float2*>(prow + nt * 8) = make_float2(acc[nt][0], acc[nt][1]);
      *reinterpret_cast<float2*>(prow + 8 * g.pp + nt * 8) = make_float2(acc[nt][2], acc[nt][3]);
    }
    __syncthreads();

    if (sub < lanes_per) {
      const Unit un = unit_of(g, u);
      const int ox = (un.b0 + bl) * g.sw - g.cw + q;
      if (unsigned(ox) < unsigned(g.wout)) {
        T* yb = y + (int64_t(un.img) * p.Cout + int64_t(grp) * g.cout_g) * int64_t(plane) + ox;
        int co = 0, al = sub;  // (co, al) stepped by lanes_per without divisions
        while (al >= g.emit) al -= g.emit, ++co;
        for (int idx = sub; idx < rows; idx += lanes_per) {
          const int oy = (un.a0 + al) * g.sh - g.ch + r;
          if (unsigned(oy) < unsigned(g.hout)) {
            const float* base = pbuf + (al * kPx + bl) * g.pp + co * g.kk;
            float s = bias != nullptr ? static_cast<float>(bias[int64_t(grp) * g.cout_g + co]) : 0.f;
            float v[kRegTaps];
#pragma unroll
            for (int m = 0; m < kRegTaps; ++m) v[m] = m < ntap ? base[toff[m]] : 0.f;
#pragma unroll
            for (int m = 0; m < kRegTaps; ++m) s += v[m];
            for (int m = kRegTaps; m < ntap_all; ++m) s += base[tab_row[m]];
            yb[co * plane + unsigned(oy) * unsigned(g.wout)] = static_cast<T>(s);
          }
          al += lanes_per;
          while (al >= g.emit) al -= g.emit, ++co;
        }
      }
    }
  }
}

int n_tiles(int64_t nc) { return nc <= 48 ? 6 : nc <= 88 ? 11 : 12; }

int smem_bytes(const TapsGeom& g, int nt, int elem) {
  return 4 * (g.kpad / (elem == 2 ? 16 : 8) * nt * 64 + kRows * kPx * g.pp + ((g.ntab + 3) & ~3)) +
         kMaxKPad * kCP * elem;
}

// False where the shape is outside the kernel's limits (convt_taps.h). Each axis takes the shift whose taps read the
// fewest offsets: a unit's products are computed whatever it owns, so fewer offsets own more cells a unit.
bool geometry(const ConvTParams& p, int elem, int smem_limit, TapsGeom& g) {
  const int64_t nc = p.Cout_g * p.KH * p.KW;
  if (nc > 96 || p.Cin_g > kMaxKPad || p.KH > 127 || p.KW > 127) return false;
  AxisCells ah[2], aw[2];
  const int nh = axis_candidates(p.sh, p.ph, p.dh, p.KH, ah), nw = axis_candidates(p.sw, p.pw, p.dw, p.KW, aw);
  if (nh == 0 || nw == 0) return false;
  const AxisCells &h = ah[nh - 1], &w = aw[nw - 1];  // the fewest offsets: the shifted candidate where there is one
  if (h.u > kRows || w.u > kPx || p.sh * p.sw * h.u * w.u > kMaxTab) return false;
  const int64_t lim = int64_t(1) << 31;
  if (2 * p.Cin_g * p.Hin * p.Win >= lim || p.Cout_g * p.Hout * p.Wout >= lim) return false;
  const int64_t hc = (p.Hout + h.c + p.sh - 1) / p.sh, wc = (p.Wout + w.c + p.sw - 1) / p.sw;
  g.emit = kRows - h.u + 1;
  g.sc = kPx - w.u + 1;
  if (g.sc * p.sw * p.sh > kThreads) return false;  // the col2im's (height phase, column) lanes a unit
  const int64_t steps = (hc + g.emit - 1) / g.emit, strips = (wc + g.sc - 1) / g.sc;
  if (p.N * steps * strips >= lim) return false;
  g.hin = static_cast<int>(p.Hin);
  g.win = static_cast<int>(p.Win);
  g.hout = static_cast<int>(p.Hout);
  g.wout = static_cast<int>(p.Wout);
  g.sh = static_cast<int>(p.sh);
  g.sw = static_cast<int>(p.sw);
  g.ch = h.c;
  g.cw = w.c;
  g.da0 = h.d0;
  g.db0 = w.d0;
  g.uh = h.u;
  g.uw = w.u;
  g.cin_g = static_cast<int>(p.Cin_g);
  g.cout_g = static_cast<int>(p.Cout_g);
  g.nc = static_cast<int>(nc);
  g.kw = static_cast<int>(p.KW);
  g.kk = static_cast<int>(p.KH * p.KW);
  const int kstep = elem == 2 ? 16 : 8;
  g.kpad = static_cast<int>((p.Cin_g + kstep - 1) / kstep * kstep);
  const int nt = n_tiles(nc);
  g.pp = 8 * nt + ((8 - 8 * nt) % 32 + 32) % 32;
  g.strips = static_cast<int>(strips);
  g.steps = static_cast<int>(steps);
  g.units = static_cast<int>(p.N * steps * strips);
  g.ntab = static_cast<int>(p.sh * p.sw * h.u * w.u);
  std::copy(h.tab, h.tab + kAxisMaxS * kAxisMaxU, g.th);
  std::copy(w.tab, w.tab + kAxisMaxS * kAxisMaxU, g.tw);
  return smem_bytes(g, nt, elem) <= smem_limit;
}

template <typename T>
void launch_typed(const ConvTParams& p, const TapsGeom& g, const at::Tensor& x, const at::Tensor& w,
                  const at::Tensor& b, at::Tensor& out, cudaStream_t stream) {
  if (g.units == 0 || p.groups == 0) return;
  const T* bp = b.defined() ? b.const_data_ptr<T>() : nullptr;
  auto go = [&](auto kernel, int nt) {
    const int bytes = smem_bytes(g, nt, sizeof(T));
    allow_dynamic_smem(kernel, bytes);
    // Persistent: as many blocks as run at once (two an SM where the shared memory allows: an SM's is the block
    // limit and 1 KB a block more), shared by the groups.
    const int dev = x.get_device();
    const int64_t resident = int64_t(sm_count(dev)) * (2 * (bytes + 1024) <= max_smem_optin(dev) + 1024 ? 2 : 1);
    const int64_t per_group = std::max<int64_t>(1, resident / p.groups);
    const dim3 grid(static_cast<unsigned>(std::min<int64_t>(g.units, per_group)), static_cast<unsigned>(p.groups));
    kernel<<<grid, kThreads, bytes, stream>>>(p, g, x.const_data_ptr<T>(), w.const_data_ptr<T>(), bp,
                                              out.mutable_data_ptr<T>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  };
  switch (n_tiles(g.nc)) {
    case 6: go(convt_taps_kernel<T, 6>, 6); break;
    case 11: go(convt_taps_kernel<T, 11>, 11); break;
    default: go(convt_taps_kernel<T, 12>, 12);
  }
}

}  // namespace

bool taps_supports(const ConvTParams& p, const at::Tensor& x, bool tf32) {
  const at::ScalarType dt = x.scalar_type();
  if (dt != at::kHalf && dt != at::kBFloat16 && !(dt == at::kFloat && tf32)) return false;
  if (p.groups > 65535) return false;  // grid.y
  TapsGeom g;
  return geometry(p, static_cast<int>(x.element_size()), max_smem_optin(x.get_device()), g);
}

void launch_taps(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 cudaStream_t stream) {
  TapsGeom g;
  CONVT_CHECK(geometry(p, static_cast<int>(x.element_size()), max_smem_optin(x.get_device()), g),
              "convt: the taps kernel does not take this shape");
  switch (x.scalar_type()) {
    case at::kFloat: launch_typed<float>(p, g, x, w, b, out, stream); break;
    case at::kHalf: launch_typed<at::Half>(p, g, x, w, b, out, stream); break;
    case at::kBFloat16: launch_typed<at::BFloat16>(p, g, x, w, b, out, stream); break;
    default: TORCH_CHECK(false, "convt: the taps kernel takes float32 (as TF32), float16 and bfloat16");
  }
}

}  // namespace convt
