// The columns path (see convt_cols.h). A block of 8 warps computes a 128 x 128 (or, for images of 129-256 pixels,
// 256 x 64) tile of pixels x columns on mma.sync: m16n8k16 for fp16/bf16, m16n8k8 TF32 for fp32 (three of them,
// 3xTF32, for strict fp32). The operands are read as they lie, with no layout pass: a chunk of input channels is a
// [channel][pixel] slab of the NCHW input (16-byte copies never cross an image: its pixels come in multiples of 16
// bytes) and a [channel][column] slab of the weights, both copied by cp.async into three stage buffers (one barrier
// a chunk). Half-type fragments come out of those k-major slabs by ldmatrix.trans; TF32 fragments by plain loads,
// whose row pitch (8 words past a multiple of 32) puts a warp's 32 reads in 32 banks. Shuffle: where the kernel
// width is even, a fragment's column pair is two adjacent outputs of one row and goes out as one store, eight lanes
// covering 32 contiguous bytes. Gather: the tile goes to shared memory in fp32 and each thread sums its outputs' taps
// from it, with the divisibility test (oh + pad - kh * dil) % stride per tap.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "convt_cols.h"
#include "smem_attr.h"

namespace convt {
namespace {

#include "cp_async.cuh"
#include "mma_sync.cuh"
#include "store_pair.cuh"

constexpr int kThreads = 256;
constexpr int kStages = 3;
// Gather's tap tables: per output row its taps' tile offsets and their count, the same per output column (ints).
constexpr int kTapTable = 4096;

// WM warps along pixels (2 or 4), the rest along columns; each warp 64 x 32. KB: 64-byte k-slices a stage.
template <typename T, int KB, int WM>
struct Tile {
  static constexpr int BM = WM * 64, BN = 256 / WM;
  static constexpr int PA = BM + 8, PB = BN + 8;  // staged row pitches: ldmatrix's 8 rows hit every bank
  static constexpr int BK = KB * 64 / static_cast<int>(sizeof(T));
  static constexpr int V = 16 / static_cast<int>(sizeof(T));  // elements a 16-byte copy
  static constexpr int kStageElems = BK * (PA + PB);
  static constexpr int kStageBytes = kStages * kStageElems * static_cast<int>(sizeof(T));
  static constexpr int PC = BN + 8;  // floats a row of the gather tile: 8 past 32, so float2 writes spread
  static constexpr int kGatherBytes = BM * PC * 4 + kTapTable * 4;  // the tile, then the tap tables
  static constexpr int kSmemBytes = kStageBytes > kGatherBytes ? kStageBytes : kGatherBytes;
  static constexpr int kARow = BM / V, kBRow = BN / V;  // copies a staged row
  static constexpr int kACopies = BK * kARow / kThreads, kBCopies = BK * kBRow / kThreads;  // a thread's, a stage
  static_assert(kACopies >= 1 && kBCopies >= 1 && BK * kARow % kThreads == 0 && BK * kBRow % kThreads == 0);
};

struct ColsGeom {
  int hin, win, hw;     // input image
  int hout, wout;
  int kh, kw, kk, sh, sw, ph, pw, dh, dw;
  int cin_g, cout_g;
  int m_total;          // GEMM rows a group: batch x pixels
  int nc;               // GEMM columns a group: Cout/g x KH x KW
  int m_eff, n_eff;     // rows and columns a block computes (gather: whole images, whole output channels)
  int m_tiles, n_tiles;
  bool gather;
};

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

// One staged chunk into the warp's 64 x 32 accumulators. As/Bs: [k][pixel] and [k][column] slabs.
template <typename T, typename Tl, bool kStrict>
__device__ __forceinline__ void mma_chunk(float (&acc)[4][4][4], const T* As, const T* Bs, int wm, int wn,
                                          int lane) {
  constexpr int PA = Tl::PA, PB = Tl::PB;
  if constexpr (std::is_same_v<T, float>) {
    // m16n8k8 TF32: a0 (pixel g, k t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); b0 (k t, column g), b1 (t+4, g).
    // Strict fp32 splits each operand into a TF32 high part and the TF32 rounding of the rest (3xTF32: the
    // low x low product is below fp32's precision), small products first.
    const int gq = lane >> 2, t = lane & 3;
#pragma unroll
    for (int ks = 0; ks < Tl::BK; ks += 8) {
      const float* ap = As + (ks + t) * PA + wm * 64 + gq;
      const float* bp = Bs + (ks + t) * PB + wn * 32 + gq;
      uint32_t b[4][2], bl[4][2];
#pragma unroll
      for (int nj = 0; nj < 4; ++nj) {
        const float v0 = bp[nj * 8], v1 = bp[4 * PB + nj * 8];
        b[nj][0] = tf32_round(v0);
        b[nj][1] = tf32_round(v1);
        if constexpr (kStrict) {
          bl[nj][0] = tf32_round(v0 - __uint_as_float(b[nj][0]));
          bl[nj][1] = tf32_round(v1 - __uint_as_float(b[nj][1]));
        }
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
        const float v[4] = {ap[mi * 16], ap[mi * 16 + 8], ap[4 * PA + mi * 16], ap[4 * PA + mi * 16 + 8]};
        uint32_t a[4], al[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          a[e] = tf32_round(v[e]);
          if constexpr (kStrict) al[e] = tf32_round(v[e] - __uint_as_float(a[e]));
        }
#pragma unroll
        for (int nj = 0; nj < 4; ++nj) {
          if constexpr (kStrict) {
            Mma<T>::run(acc[mi][nj], al, b[nj]);
            Mma<T>::run(acc[mi][nj], a, bl[nj]);
          }
          Mma<T>::run(acc[mi][nj], a, b[nj]);
        }
      }
    }
  } else {
    // m16n8k16: the slabs are k-major, so each 8 x 8 fragment matrix is 8 k-rows of 8 pixels (or columns) and
    // ldmatrix.trans hands thread (g, t) the pair (k 2t, 2t+1) of pixel (column) g. Lanes 8i..8i+7 address
    // matrix i: A's are (k 0-7 | 8-15) x (pixels 0-7 | 8-15) in a0..a3 order, B's two n8 tiles' (k 0-7, 8-15).
    const int i = lane >> 3, r = lane & 7;
#pragma unroll
    for (int ks = 0; ks < Tl::BK; ks += 16) {
      uint32_t a[4][4], b[4][2];
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
        ldmatrix_x4_trans(a[mi], As + (ks + (i >> 1) * 8 + r) * PA + wm * 64 + mi * 16 + (i & 1) * 8);
#pragma unroll
      for (int jp = 0; jp < 2; ++jp) {
        uint32_t q[4];
        ldmatrix_x4_trans(q, Bs + (ks + (i & 1) * 8 + r) * PB + wn * 32 + jp * 16 + (i >> 1) * 8);
        b[2 * jp][0] = q[0];
        b[2 * jp][1] = q[1];
        b[2 * jp + 1][0] = q[2];
        b[2 * jp + 1][1] = q[3];
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int nj = 0; nj < 4; ++nj) Mma<T>::run(acc[mi][nj], a[mi], b[nj]);
    }
  }
}

// Shuffle: the accumulator (pixel g or g+8, columns 2t and 2t+1) of each 16 x 8 tile straight to its outputs.
template <typename T>
__device__ __forceinline__ void store_shuffled(const float (&acc)[4][4][4], const ConvTParams& p, const ColsGeom& sg,
                                               int64_t g, int m0, int n0, int wm, int wn, int lane,
                                               const T* __restrict__ bias, T* __restrict__ y, bool pair) {
  const int gq = lane >> 2, t = lane & 3;
  int64_t pix_off[4][2];
  bool pix_ok[4][2];
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = m0 + wm * 64 + mi * 16 + gq + 8 * h;
      const int img = m / sg.hw, q = m - img * sg.hw, ih = q / sg.win, iw = q - ih * sg.win;
      pix_ok[mi][h] = m < sg.m_total;
      pix_off[mi][h] = int64_t(img) * p.Cout * p.Hout * p.Wout + int64_t(ih) * sg.kh * p.Wout + int64_t(iw) * sg.kw;
    }
  auto column = [&](int c, int64_t& off, float& bv) {
    const int co = c / sg.kk, rem = c - co * sg.kk, a = rem / sg.kw, b = rem - a * sg.kw;
    const int64_t oc = g * p.Cout_g + co;
    off = (oc * p.Hout + a) * p.Wout + b;
    bv = bias != nullptr ? static_cast<float>(bias[oc]) : 0.f;
  };
#pragma unroll
  for (int nj = 0; nj < 4; ++nj) {
    const int c = n0 + wn * 32 + nj * 8 + 2 * t;
    if (c >= sg.nc) continue;  // nc is a multiple of 4 or 8, so c + 1 < nc too
    int64_t off0, off1;
    float b0, b1;
    column(c, off0, b0);
    if (pair) {
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          if (pix_ok[mi][h]) store2(y + off0 + pix_off[mi][h], acc[mi][nj][2 * h] + b0, acc[mi][nj][2 * h + 1] + b0);
    } else {
      column(c + 1, off1, b1);
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          if (pix_ok[mi][h]) {
            y[off0 + pix_off[mi][h]] = static_cast<T>(acc[mi][nj][2 * h] + b0);
            y[off1 + pix_off[mi][h]] = static_cast<T>(acc[mi][nj][2 * h + 1] + b1);
          }
    }
  }
}

// Gather: the block's tile holds every tap of its images x output channels; each output sums the taps that reach it.
// Which taps reach an output depends on its row and column only, so the divisibility tests run once per output row
// and column, into tables of tile offsets: an output then costs one load and add per tap.
template <typename T, typename Tl>
__device__ __forceinline__ void store_gathered(const float (&acc)[4][4][4], float* cs, const ConvTParams& p,
                                               const ColsGeom& sg, int64_t g, int m0, int n0, int wm, int wn,
                                               int tid, const T* __restrict__ bias, T* __restrict__ y) {
  constexpr int PC = Tl::PC;
  const int lane = tid & 31, gq = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int nj = 0; nj < 4; ++nj)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        *reinterpret_cast<float2*>(cs + (wm * 64 + mi * 16 + gq + 8 * h) * PC + wn * 32 + nj * 8 + 2 * t) =
            make_float2(acc[mi][nj][2 * h], acc[mi][nj][2 * h + 1]);
  int* row_tab = reinterpret_cast<int*>(cs + Tl::BM * PC);  // [hout][kh] offsets, [wout][kw], [hout] and [wout] counts
  int* col_tab = row_tab + sg.hout * sg.kh;
  int* row_n = col_tab + sg.wout * sg.kw;
  int* col_n = row_n + sg.hout;
  for (int r = tid; r < sg.hout + sg.wout; r += kThreads) {
    int n = 0;
    if (r < sg.hout) {
      for (int kh = 0; kh < sg.kh; ++kh) {
        const int th = r + sg.ph - kh * sg.dh;
        if (th >= 0 && th % sg.sh == 0 && th / sg.sh < sg.hin) row_tab[r * sg.kh + n++] = th / sg.sh * sg.win * PC + kh * sg.kw;
      }
      row_n[r] = n;
    } else {
      const int ow = r - sg.hout;
      for (int kw = 0; kw < sg.kw; ++kw) {
        const int tw = ow + sg.pw - kw * sg.dw;
        if (tw >= 0 && tw % sg.sw == 0 && tw / sg.sw < sg.win) col_tab[ow * sg.kw + n++] = tw / sg.sw * PC + kw;
      }
      col_n[ow] = n;
    }
  }
  __syncthreads();
  // Threads along output positions (a row-major pixel of an output plane), then along the block's (image, output
  // channel) pairs, so a thread reads a position's tables once for all the pairs it sums there.
  const int ipt = sg.m_eff / sg.hw, cpt = sg.n_eff / sg.kk, img0 = m0 / sg.hw, co0 = n0 / sg.kk;
  const int hwo = sg.hout * sg.wout, pairs = ipt * cpt;  // hwo < 2^31 (cols_supports)
  const int along = hwo < kThreads ? hwo : kThreads, across = kThreads / along;
  const int tp = tid % along, tq = tid / along;
  const int64_t batch = sg.m_total / sg.hw, plane = int64_t(hwo), img_stride = int64_t(p.Cout) * hwo;
  if (tq >= across) return;
  for (int pos = tp; pos < hwo; pos += along) {
    const int oh = pos / sg.wout, ow = pos - oh * sg.wout;
    const int* rt = row_tab + oh * sg.kh;
    const int* ct = col_tab + ow * sg.kw;
    const int nr = row_n[oh], ncl = col_n[ow];
    for (int pr = tq; pr < pairs; pr += across) {
      const int il = pr / cpt, cl = pr - il * cpt, img = img0 + il, co = co0 + cl;
      if (img < batch && co < sg.cout_g) {
        const int64_t oc = g * sg.cout_g + co;
        float s = bias != nullptr ? static_cast<float>(bias[oc]) : 0.f;
        const float* tile = cs + il * sg.hw * PC + cl * sg.kk;
        for (int a = 0; a < nr; ++a) {
          const float* tr = tile + rt[a];
          for (int b = 0; b < ncl; ++b) s += tr[ct[b]];
        }
        y[img * img_stride + oc * plane + pos] = static_cast<T>(s);
      }
    }
  }
}

template <typename T, int KB, int WM, bool kStrict>
__global__ void __launch_bounds__(kThreads, 2)
    convt_cols_kernel(const ConvTParams p, const ColsGeom sg, const T* __restrict__ x, const T* __restrict__ w,
                      const T* __restrict__ bias, T* __restrict__ y, bool pair) {
  using Tl = Tile<T, KB, WM>;
  constexpr int BK = Tl::BK, V = Tl::V;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>(smem_raw);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp % WM, wn = warp / WM;

  // Column tiles fastest: the blocks that read one pixel tile run together and share it through L2.
  unsigned blk = blockIdx.x;  // < 2^31 (cols_supports)
  const int nt = static_cast<int>(blk % sg.n_tiles);
  blk /= sg.n_tiles;
  const int mt = static_cast<int>(blk % sg.m_tiles);
  const int64_t g = blk / sg.m_tiles;
  const int m0 = mt * sg.m_eff, n0 = nt * sg.n_eff;
  const int nchunks = (sg.cin_g + BK - 1) / BK;

  // A thread's copies keep their pixel (column) from chunk to chunk and from one copy to the next (a copy row is a
  // divisor of the block), which are kThreads / row-copies rows apart; only the channel moves. Copies past the tile,
  // the batch, the columns or the channels are zero-filled, whole.
  constexpr int kAStep = kThreads / Tl::kARow, kBStep = kThreads / Tl::kBRow;
  static_assert(kThreads % Tl::kARow == 0 && kThreads % Tl::kBRow == 0);
  const int ar = tid / Tl::kARow, ac = (tid % Tl::kARow) * V, br = tid / Tl::kBRow, bc = (tid % Tl::kBRow) * V;
  const int am = m0 + ac, img = am / sg.hw;
  const bool a_ok = ac < sg.m_eff && am < sg.m_total, b_ok = bc < sg.n_eff && n0 + bc < sg.nc;
  const T* a_src = x + (int64_t(img) * p.Cin + g * sg.cin_g + ar) * sg.hw + (am - img * sg.hw);
  const T* b_src = w + (g * sg.cin_g + br) * sg.nc + n0 + bc;
  const int a_dst = ar * Tl::PA + ac, b_dst = BK * Tl::PA + br * Tl::PB + bc;
  auto load_stage = [&](int chunk, int buf) {
    T* st = smem + buf * Tl::kStageElems;
    const int k0 = chunk * BK;
#pragma unroll
    for (int j = 0; j < Tl::kACopies; ++j) {
      const int row = ar + j * kAStep;
      const bool ok = a_ok && k0 + row < sg.cin_g;
      cp_async16_zfill(st + a_dst + j * kAStep * Tl::PA, ok ? a_src + int64_t(k0 + j * kAStep) * sg.hw : x, ok);
    }
#pragma unroll
    for (int j = 0; j < Tl::kBCopies; ++j) {
      const int row = br + j * kBStep;
      const bool ok = b_ok && k0 + row < sg.cin_g;
      cp_async16_zfill(st + b_dst + j * kBStep * Tl::PB, ok ? b_src + int64_t(k0 + j * kBStep) * sg.nc : w, ok);
    }
  };

  float acc[4][4][4];
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int nj = 0; nj < 4; ++nj)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][nj][e] = 0.f;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < nchunks) load_stage(s, s);
    cp_async_commit();
  }
  for (int kc = 0; kc < nchunks; ++kc) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // chunk kc is in; every warp is past chunk kc - 1, whose buffer the next copies reuse
    const int next = kc + kStages - 1;
    if (next < nchunks) load_stage(next, next % kStages);
    cp_async_commit();
    const T* st = smem + (kc % kStages) * Tl::kStageElems;
    mma_chunk<T, Tl, kStrict>(acc, st, st + BK * Tl::PA, wm, wn, lane);
  }

  if (sg.gather) {
    cp_async_wait<0>();
    __syncthreads();  // the stage buffers become the tile
    store_gathered<T, Tl>(acc, reinterpret_cast<float*>(smem_raw), p, sg, g, m0, n0, wm, wn, tid, bias, y);
  } else {
    store_shuffled<T>(acc, p, sg, g, m0, n0, wm, wn, lane, bias, y, pair);
  }
}

// Images past 128 pixels take the 256 x 64 tile (whole images of up to 256 pixels a block in gather).
int warps_m(const ConvTParams& p) { return p.Hin * p.Win > 128 && !cols_shuffle(p) ? 4 : 2; }

// channels: gather's output channels a block, at most what the column tile holds (0: that many).
ColsGeom geometry(const ConvTParams& p, int wm, int channels = 0) {
  const int bm = wm * 64, bn = 256 / wm;
  ColsGeom sg;
  sg.hin = static_cast<int>(p.Hin);
  sg.win = static_cast<int>(p.Win);
  sg.hw = sg.hin * sg.win;
  sg.hout = static_cast<int>(p.Hout);
  sg.wout = static_cast<int>(p.Wout);
  sg.kh = static_cast<int>(p.KH);
  sg.kw = static_cast<int>(p.KW);
  sg.kk = sg.kh * sg.kw;
  sg.sh = static_cast<int>(p.sh);
  sg.sw = static_cast<int>(p.sw);
  sg.ph = static_cast<int>(p.ph);
  sg.pw = static_cast<int>(p.pw);
  sg.dh = static_cast<int>(p.dh);
  sg.dw = static_cast<int>(p.dw);
  sg.cin_g = static_cast<int>(p.Cin_g);
  sg.cout_g = static_cast<int>(p.Cout_g);
  sg.m_total = static_cast<int>(p.N * p.Hin * p.Win);
  sg.nc = sg.cout_g * sg.kk;
  sg.gather = !cols_shuffle(p);
  sg.m_eff = sg.gather ? bm / sg.hw * sg.hw : bm;
  sg.n_eff = sg.gather ? (channels > 0 ? std::min(channels, bn / sg.kk) : bn / sg.kk) * sg.kk : bn;
  sg.m_tiles = sg.m_eff > 0 ? (sg.m_total + sg.m_eff - 1) / sg.m_eff : 0;
  sg.n_tiles = sg.n_eff > 0 ? (sg.nc + sg.n_eff - 1) / sg.n_eff : 0;
  return sg;
}

// Gather's output channels a block. All the column tile holds, but where that leaves most SMs idle
// (dcgan-128-64-n1: 16 blocks of 4 channels on 132 SMs) halved while the grid stays within one block an SM: the
// blocks then run fewer of the gather's per-output sums, the part of such a layer that runs on few warps an SM
// (ncu: 60% of its stall samples), at the price of multiply-adds on columns they drop. GPU time on an H200, 4 -> 1
// channels a block: dcgan-128-64-n1 TF32 19.4 -> 14.0 us, fp16/bf16 16.6 -> 11.3, strict 25.3 -> 20.0 (cuDNN 14.4,
// 17.5, 14.4; docs/kernel-notes.md, session 25). A forced count is taken as far as the tile and 16-byte column
// copies allow.
int pick_channels(const ConvTParams& p, int wm, int elem_bytes, int forced, int device) {
  if (cols_shuffle(p)) return 0;
  const int kk = static_cast<int>(p.KH * p.KW), natural = 256 / wm / kk, vec = 16 / elem_bytes;
  auto blocks = [&](int c) { const ColsGeom sg = geometry(p, wm, c); return p.groups * sg.m_tiles * sg.n_tiles; };
  auto ok = [&](int c) { return c >= 1 && c <= natural && c * kk % vec == 0 && blocks(c) < (int64_t(1) << 31); };
  if (forced != 0) return ok(forced) ? forced : natural;
  int sms = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  int c = natural;
  while (c > 1 && ok(c / 2) && blocks(c / 2) <= sms) c /= 2;
  return c;
}

template <typename T, int KB, int WM, bool kStrict>
void launch_typed(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                  at::Tensor& out, int channels, cudaStream_t stream) {
  using Tl = Tile<T, KB, WM>;
  const ColsGeom sg = geometry(p, WM, pick_channels(p, WM, sizeof(T), channels, x.get_device()));
  const int64_t blocks = p.groups * sg.m_tiles * sg.n_tiles;
  if (blocks == 0) return;
  T* y = out.mutable_data_ptr<T>();
  // A column pair is two adjacent outputs of one row where the kernel width is even; one store needs the pair aligned.
  const bool pair = p.KW % 2 == 0 && reinterpret_cast<uintptr_t>(y) % (2 * sizeof(T)) == 0;
  auto kernel = convt_cols_kernel<T, KB, WM, kStrict>;
  allow_dynamic_smem(kernel, Tl::kSmemBytes);
  kernel<<<static_cast<unsigned>(blocks), kThreads, Tl::kSmemBytes, stream>>>(
      p, sg, x.const_data_ptr<T>(), w.const_data_ptr<T>(), b.defined() ? b.const_data_ptr<T>() : nullptr, y, pair);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T, int WM, bool kStrict>
void launch_depth(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                  at::Tensor& out, int depth, int channels, cudaStream_t stream) {
  if (depth == 2) {
    launch_typed<T, 2, WM, kStrict>(p, x, w, b, out, channels, stream);
  } else {
    launch_typed<T, 1, WM, kStrict>(p, x, w, b, out, channels, stream);
  }
}

template <typename T, bool kStrict = false>
void launch_shape(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                  at::Tensor& out, int depth, int channels, cudaStream_t stream) {
  // 128 bytes of k a stage past 128 input channels a group (unet-512-256-n8 fp16 0.178 against 0.187 ms with 64,
  // bf16 0.178 against 0.187; TF32 0.323 against 0.347), but not on the 256-pixel tile, where it spills.
  if (depth == 0) depth = p.Cin_g > 128 && warps_m(p) == 2 ? 2 : 1;
  if (warps_m(p) == 4) {
    launch_depth<T, 4, kStrict>(p, x, w, b, out, depth, channels, stream);
  } else {
    launch_depth<T, 2, kStrict>(p, x, w, b, out, depth, channels, stream);
  }
}

}  // namespace

bool cols_shuffle(const ConvTParams& p) {
  return p.KH == p.sh && p.KW == p.sw && p.ph == 0 && p.pw == 0 && p.oph == 0 && p.opw == 0 && p.dh == 1 && p.dw == 1;
}

bool cols_supports(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w) {
  const at::ScalarType dt = x.scalar_type();
  if (dt != at::kHalf && dt != at::kBFloat16 && dt != at::kFloat) return false;
  const int64_t vec = 16 / static_cast<int64_t>(x.element_size()), lim = int64_t(1) << 30;
  const int64_t hw = p.Hin * p.Win, nc = p.Cout_g * p.KH * p.KW;
  if (hw % vec != 0 || nc % vec != 0 || p.N * hw >= lim || nc >= lim || p.Cin_g >= lim) return false;
  if (reinterpret_cast<uintptr_t>(x.const_data_ptr()) % 16 != 0 || reinterpret_cast<uintptr_t>(w.const_data_ptr()) % 16 != 0)
    return false;
  const int wm = warps_m(p), bm = wm * 64, bn = 256 / wm;
  if (!cols_shuffle(p)) {
    // Gather: whole images and whole output channels a block, the column tile a whole number of 16-byte copies.
    if (hw > bm || p.KH * p.KW > bn || bn / (p.KH * p.KW) * (p.KH * p.KW) % vec != 0) return false;
    if (p.Hout * (p.KH + 1) + p.Wout * (p.KW + 1) > kTapTable || p.sh >= lim || p.sw >= lim || p.ph >= lim ||
        p.pw >= lim || p.dh >= lim || p.dw >= lim)
      return false;
    if (p.Hout * p.Wout >= (int64_t(1) << 31)) return false;
  }
  const ColsGeom sg = geometry(p, wm);
  return p.groups * sg.m_tiles * sg.n_tiles < (int64_t(1) << 31);
}

void launch_cols(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 bool tf32, int depth, int channels, cudaStream_t stream) {
  CONVT_CHECK(depth >= 0 && depth <= 2, "convt: the columns kernel stages 1 or 2 x 64 bytes of k, not ", depth);
  CONVT_CHECK(channels >= 0, "convt: the columns kernel's output channels a block must be positive (or 0, its pick), not ", channels);
  switch (x.scalar_type()) {
    case at::kFloat:
      if (tf32) {
        launch_shape<float>(p, x, w, b, out, depth, channels, stream);
      } else {
        launch_shape<float, true>(p, x, w, b, out, depth, channels, stream);
      }
      break;
    case at::kHalf: launch_shape<at::Half>(p, x, w, b, out, depth, channels, stream); break;
    case at::kBFloat16: launch_shape<at::BFloat16>(p, x, w, b, out, depth, channels, stream); break;
    default: TORCH_CHECK(false, "convt: the columns kernel takes float32, float16 and bfloat16");
  }
}

}  // namespace convt
