// The columns path (see convt_cols.h). A block of 8 warps computes a 128 x 128 (or, for images past 128 pixels,
// 256 x 64) tile of pixels x columns on mma.sync: m16n8k16 for fp16/bf16, m16n8k8 TF32 for fp32 (three of them,
// 3xTF32, for strict fp32). The operands are read as they lie, with no layout pass: a chunk of input channels is a
// [channel][pixel] slab of the NCHW input (16-byte copies never cross an image, or a tile's row: pixels an image, or
// a row, come in multiples of 16 bytes) and a [channel][column] slab of the weights (16-byte copies, or an element a
// copy where rows are off 16 bytes: FSRCNN's 81 columns), both copied by cp.async into three stage buffers (one
// barrier a chunk). Half-type fragments come out of those k-major slabs by ldmatrix.trans; TF32 fragments by plain
// loads, whose row pitch (8 words past a multiple of 32) puts a warp's 32 reads in 32 banks. Shuffle: where the
// kernel width is even, a fragment's column pair is two adjacent outputs of one row and goes out as one store, eight
// lanes covering 32 contiguous bytes. Gather: the tile goes to shared memory in fp32 and each thread sums its
// outputs' taps from it, with the divisibility test (oh + pad - kh * dil) % stride per output row and column.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "convt_cols.h"
#include "convt_colsw.h"
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
  int m_eff, n_eff;     // rows and columns a block computes (gather: whole images or one tile, whole output channels)
  int m_tiles, n_tiles;
  // Gather's input tile: th x tw pixels of one image, origins sth and stw apart, tiles_h x tiles_w of them an image
  // (whole images: the image itself, one tile). own_h x own_w: the most output rows and columns a tile owns, which
  // size its tap tables. reach: (K - 1) x dilation a axis.
  int th, tw, sth, stw, tiles_h, tiles_w, own_h, own_w;
  int64_t reach_h, reach_w;
  bool gather, tiled;
  bool scalar_b;  // weight rows (or a block's columns) off 16 bytes: B copied an element at a time
};

// The tiled gather's partition of the outputs along an axis. Tile j of `tiles` (input origins `st` apart) owns the
// outputs whose first contributing input row, ceil((o + pad - reach) / s) clamped to the image, lies in
// [j * st, (j + 1) * st), the last tile from j * st on. So its outputs start at (j * st - 1) * s - pad + reach + 1,
// and every tap of them reads a row in [j * st, j * st + st + reach / s): inside a tile of st + reach / s rows.
__host__ __device__ __forceinline__ int own_start(int j, int tiles, int st, int s, int pad, int64_t reach, int out) {
  if (j <= 0) return 0;
  if (j >= tiles) return out;
  const int64_t o = (int64_t(j) * st - 1) * s - pad + reach + 1;
  return o < 0 ? 0 : o > out ? out : static_cast<int>(o);
}

// The outputs a gather block writes: images img0.. (whole images) or one tile of image img0 whose input starts at
// row r0, column c0; output rows [oh0, oh1) and columns [ow0, ow1) of each.
struct Owned {
  int img0, r0, c0, oh0, oh1, ow0, ow1;
};

// Tile mt of the tiled gather: tiles_h x tiles_w an image, rows slowest.
__device__ __forceinline__ Owned tile_of(const ColsGeom& sg, int mt) {
  const int per = sg.tiles_h * sg.tiles_w, t = mt % per, ty = t / sg.tiles_w, tx = t - ty * sg.tiles_w;
  return {mt / per,
          ty * sg.sth,
          tx * sg.stw,
          own_start(ty, sg.tiles_h, sg.sth, sg.sh, sg.ph, sg.reach_h, sg.hout),
          own_start(ty + 1, sg.tiles_h, sg.sth, sg.sh, sg.ph, sg.reach_h, sg.hout),
          own_start(tx, sg.tiles_w, sg.stw, sg.sw, sg.pw, sg.reach_w, sg.wout),
          own_start(tx + 1, sg.tiles_w, sg.stw, sg.sw, sg.pw, sg.reach_w, sg.wout)};
}

// One staged chunk into the warp's 64 x 32 accumulators, columns wcol.., k-steps of part kpart of kParts (the
// whole chunk, or half of it where two warps share columns). As/Bs: [k][pixel] and [k][column] slabs.
template <typename T, typename Tl, bool kStrict, int kParts>
__device__ __forceinline__ void mma_chunk(float (&acc)[4][4][4], const T* As, const T* Bs, int wm, int wcol,
                                          int kpart, int lane) {
  constexpr int PA = Tl::PA, PB = Tl::PB, kSpan = Tl::BK / kParts;
  const int k0 = kpart * kSpan;
  if constexpr (std::is_same_v<T, float>) {
    // m16n8k8 TF32: a0 (pixel g, k t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); b0 (k t, column g), b1 (t+4, g).
    // Strict fp32 splits each operand into a TF32 high part and the TF32 rounding of the rest (3xTF32: the
    // low x low product is below fp32's precision), small products first.
    const int gq = lane >> 2, t = lane & 3;
#pragma unroll
    for (int step = 0; step < kSpan; step += 8) {
      const int ks = k0 + step;
      const float* ap = As + (ks + t) * PA + wm * 64 + gq;
      const float* bp = Bs + (ks + t) * PB + wcol + gq;
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
    // ldmatrix.trans hands thread (g, t) the pair (k 2t, 2t+1) of pixel (column) g. Lanes 8li..8li+7 address
    // matrix li: A's are (k 0-7 | 8-15) x (pixels 0-7 | 8-15) in a0..a3 order, B's two n8 tiles' (k 0-7, 8-15).
    const int li = lane >> 3, r = lane & 7;
#pragma unroll
    for (int step = 0; step < kSpan; step += 16) {
      const int ks = k0 + step;
      uint32_t a[4][4], b[4][2];
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
        ldmatrix_x4_trans(a[mi], As + (ks + (li >> 1) * 8 + r) * PA + wm * 64 + mi * 16 + (li & 1) * 8);
#pragma unroll
      for (int jp = 0; jp < 2; ++jp) {
        uint32_t q[4];
        ldmatrix_x4_trans(q, Bs + (ks + (li & 1) * 8 + r) * PB + wcol + jp * 16 + (li >> 1) * 8);
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

// Shuffle: the accumulator (pixel g or g+8, columns 2t and 2t+1) of each 16 x 8 tile straight to its outputs. A
// thread's 8 pixels lie 8 apart and its 4 column pairs 8 apart, so each is one division set and then stepped as a
// mixed-radix counter: the divisions an output row and column had made this epilogue ~35 instructions a store
// (ncu, unet-128-64-n1 fp16: 9.1M of the kernel's 14.9M warp instructions).
template <typename T>
__device__ __forceinline__ void store_shuffled(const float (&acc)[4][4][4], const ConvTParams& p, const ColsGeom& sg,
                                               int64_t g, int m0, int n0, int wm, int wn, int lane,
                                               const T* __restrict__ bias, T* __restrict__ y, bool pair) {
  const int gq = lane >> 2, t = lane & 3;
  int64_t pix_off[4][2];
  bool pix_ok[4][2];
  {
    int m = m0 + wm * 64 + gq;
    int img = m / sg.hw, ih = (m - img * sg.hw) / sg.win, iw = m - img * sg.hw - ih * sg.win;
    const int step_r = 8 / sg.win, step_c = 8 - step_r * sg.win;  // 8 pixels: rows and columns of an image
    const int64_t img_out = int64_t(p.Cout) * p.Hout * p.Wout;
#pragma unroll
    for (int mi = 0; mi < 4; ++mi)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        pix_ok[mi][h] = m < sg.m_total;
        pix_off[mi][h] = img * img_out + int64_t(ih) * sg.kh * p.Wout + iw * sg.kw;  // < Wout < 2^31 (cols_supports)
        m += 8;
        iw += step_c;
        ih += step_r;
        if (iw >= sg.win) {
          iw -= sg.win;
          ++ih;
        }
        while (ih >= sg.hin) {
          ih -= sg.hin;
          ++img;
        }
      }
  }
  // The thread's first column as (output channel, kernel row, kernel column); the next pair is 8 columns on.
  const int c0 = n0 + wn * 32 + 2 * t;
  int co = c0 / sg.kk, ka = (c0 - co * sg.kk) / sg.kw, kb = c0 - co * sg.kk - ka * sg.kw;
  const int s_co = 8 / sg.kk, s_a = (8 - s_co * sg.kk) / sg.kw, s_b = 8 - s_co * sg.kk - s_a * sg.kw;
  auto column = [&](int c_o, int a, int b, int64_t& off, float& bv) {
    const int64_t oc = g * p.Cout_g + c_o;
    off = (oc * p.Hout + a) * p.Wout + b;
    bv = bias != nullptr ? static_cast<float>(bias[oc]) : 0.f;
  };
#pragma unroll
  for (int nj = 0; nj < 4; ++nj) {
    const int c = c0 + nj * 8;
    if (c < sg.nc) {  // nc is a multiple of 4 or 8, so c + 1 < nc too
      int64_t off0, off1;
      float b0, b1;
      column(co, ka, kb, off0, b0);
      if (pair) {
#pragma unroll
        for (int mi = 0; mi < 4; ++mi)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            if (pix_ok[mi][h]) store2(y + off0 + pix_off[mi][h], acc[mi][nj][2 * h] + b0, acc[mi][nj][2 * h + 1] + b0);
      } else {
        // column c + 1: the next kernel column, carried into the next row or channel
        const bool wrap_b = kb + 1 == sg.kw, wrap_a = wrap_b && ka + 1 == sg.kh;
        column(wrap_a ? co + 1 : co, wrap_b ? (wrap_a ? 0 : ka + 1) : ka, wrap_b ? 0 : kb + 1, off1, b1);
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
    kb += s_b;
    if (kb >= sg.kw) {
      kb -= sg.kw;
      ++ka;
    }
    ka += s_a;
    if (ka >= sg.kh) {
      ka -= sg.kh;
      ++co;
    }
    co += s_co;
  }
}

// The warp's accumulators into the block's fp32 tile, [pixel][column] rows of PC floats (kAdd: onto what is there).
template <int PC, bool kAdd>
__device__ __forceinline__ void stage_tile(const float (&acc)[4][4][4], float* cs, int wm, int wn, int lane) {
  const int gq = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int nj = 0; nj < 4; ++nj)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float2* d = reinterpret_cast<float2*>(cs + (wm * 64 + mi * 16 + gq + 8 * h) * PC + wn * 32 + nj * 8 + 2 * t);
        float2 v = make_float2(acc[mi][nj][2 * h], acc[mi][nj][2 * h + 1]);
        if constexpr (kAdd) {
          const float2 o = *d;
          v.x += o.x;
          v.y += o.y;
        }
        *d = v;
      }
}

// Gather: the block's tile holds every tap of its images x output channels; each output sums the taps that reach it.
// Which taps reach an output depends on its row and column only, so the divisibility tests run once per output row
// and column, into tables of tile offsets: [own_h][kh] row offsets, [own_w][kw] column offsets, then the [own_h] and
// [own_w] counts, rows and columns local to the block's outputs.
struct TapTables {
  int *row, *col, *row_n, *col_n;
};

__device__ __forceinline__ TapTables tap_tables(int* base, const ColsGeom& sg) {
  TapTables t;
  t.row = base;
  t.col = t.row + sg.own_h * sg.kh;
  t.row_n = t.col + sg.own_w * sg.kw;
  t.col_n = t.row_n + sg.own_h;
  return t;
}

// Tap k reaches output o where o + pad - k * dil is a multiple of s, from input row (o + pad - k * dil) / s. The
// quotient and remainder step by dil's per tap: a 64-bit division a tap left the block's other warps waiting here
// longer than the whole mainloop (ncu, FSRCNN: 39% of stall samples at the barrier after the tables).
__device__ __forceinline__ int axis_taps(int* tab, int o, int pad, int s, int dil, int k_n, int n_in, int first,
                                         int scale, int k_scale) {
  const int t = o + pad, dq = dil / s, dr = dil - dq * s;  // t < 2^31 (cols_supports)
  int q = t / s, rem = t - q * s, n = 0;
  for (int k = 0; k < k_n && q >= 0; ++k) {
    if (rem == 0 && q < n_in) tab[n++] = (q - first) * scale + k * k_scale;
    q -= dq;
    rem -= dr;
    if (rem < 0) {
      rem += s;
      --q;
    }
  }
  return n;
}

template <int PC>
__device__ __forceinline__ void build_tap_tables(const TapTables& tt, const ColsGeom& sg, const Owned& o, int tid) {
  const int rows = o.oh1 - o.oh0, cols = o.ow1 - o.ow0;
  for (int r = tid; r < rows + cols; r += kThreads) {
    if (r < rows) {
      tt.row_n[r] = axis_taps(tt.row + r * sg.kh, o.oh0 + r, sg.ph, sg.sh, sg.dh, sg.kh, sg.hin, o.r0, sg.tw * PC, sg.kw);
    } else {
      const int c = r - rows;
      tt.col_n[c] = axis_taps(tt.col + c * sg.kw, o.ow0 + c, sg.pw, sg.sw, sg.dw, sg.kw, sg.win, o.c0, PC, 1);
    }
  }
}

// The sums, after the tile is in shared memory and the tables are built. Threads along output columns first, so a
// thread keeps its column's taps in registers (up to 4; more are read from the table) and each tap costs a load and
// an add; then along rows, then along the block's (image, output channel) pairs, which reuse a position's taps.
template <typename T, int PC>
__device__ __forceinline__ void gather_sums(const float* cs, const TapTables& tt, const ConvTParams& p,
                                            const ColsGeom& sg, int64_t g, const Owned& o, int n0, int tid,
                                            const T* __restrict__ bias, T* __restrict__ y) {
  const int rows = o.oh1 - o.oh0, cols = o.ow1 - o.ow0;
  if (rows == 0 || cols == 0) return;  // a tile that owns no outputs (clamped at the image's end)
  const int co0 = n0 / sg.kk, cpt = min(sg.n_eff / sg.kk, sg.cout_g - co0);
  const int64_t batch = sg.m_total / sg.hw;
  const int64_t left = batch - o.img0;  // images from the block's first to the batch's end
  const int ipt = sg.tiled ? 1 : left < sg.m_eff / sg.hw ? static_cast<int>(left) : sg.m_eff / sg.hw;
  const int pairs = ipt * cpt, tpix = sg.th * sg.tw;
  const int tc = min(cols, kThreads), tr = min(rows, kThreads / tc), tq = kThreads / (tc * tr);
  const int x = tid % tc, yy = (tid / tc) % tr, z = tid / (tc * tr);
  if (z >= tq) return;
  const int64_t plane = int64_t(sg.hout) * sg.wout, img_stride = int64_t(p.Cout) * plane;
  const int il0 = z / cpt, cl0 = z - il0 * cpt, step_i = tq / cpt, step_c = tq - step_i * cpt;
  for (int lc = x; lc < cols; lc += tc) {
    const int* ct = tt.col + lc * sg.kw;
    const int ncl = tt.col_n[lc];
    int c4[4];
#pragma unroll
    for (int b = 0; b < 4; ++b) c4[b] = b < ncl ? ct[b] : 0;
    for (int lr = yy; lr < rows; lr += tr) {
      const int* rt = tt.row + lr * sg.kh;
      const int nr = tt.row_n[lr];
      const int64_t at = int64_t(o.oh0 + lr) * sg.wout + o.ow0 + lc;
      int il = il0, cl = cl0;
      for (int pr = z; pr < pairs; pr += tq) {
        const int64_t oc = g * sg.cout_g + co0 + cl;
        float s = bias != nullptr ? static_cast<float>(bias[oc]) : 0.f;
        const float* tile = cs + il * tpix * PC + cl * sg.kk;
        for (int a = 0; a < nr; ++a) {
          const float* t = tile + rt[a];
          float v = 0.f;
#pragma unroll
          for (int b = 0; b < 4; ++b)
            if (b < ncl) v += t[c4[b]];
          for (int b = 4; b < ncl; ++b) v += t[ct[b]];
          s += v;
        }
        y[(o.img0 + il) * img_stride + oc * plane + at] = static_cast<T>(s);
        il += step_i;  // the next pair, z + tq, without a division an output
        cl += step_c;
        if (cl >= cpt) {
          cl -= cpt;
          ++il;
        }
      }
    }
  }
}

// kKParts 2: a gather block's columns fit one warp column (one output channel a block), so the two warp columns
// take the same columns and half of each chunk's k-steps each, summed in shared memory, rather than one of them
// multiplying columns the block drops while its sub-partition's tensor pipe is shared with the other.
template <typename T, int KB, int WM, bool kStrict, bool kScalarB, int kKParts>
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
  const int n0 = nt * sg.n_eff;
  const int nchunks = (sg.cin_g + BK - 1) / BK;
  const int m0 = sg.tiled ? 0 : mt * sg.m_eff;  // whole images (or the shuffle's any pixels) from m0 on

  // A thread's copies keep their pixel (column) from chunk to chunk and from one copy to the next (a copy row is a
  // divisor of the block), which are kThreads / row-copies rows apart; only the channel moves. Copies past the tile,
  // the batch, the columns or the channels are zero-filled, whole.
  constexpr int kAStep = kThreads / Tl::kARow, kBStep = kThreads / Tl::kBRow;
  static_assert(kThreads % Tl::kARow == 0 && kThreads % Tl::kBRow == 0);
  const int ar = tid / Tl::kARow, ac = (tid % Tl::kARow) * V, br = tid / Tl::kBRow, bc = (tid % Tl::kBRow) * V;
  bool a_ok;
  const T* a_src;
  if (sg.tiled) {  // a tile row is whole copies, and its origin column a multiple of one (win too: no copy straddles)
    const Owned t = tile_of(sg, mt);
    const int rr = ac / sg.tw, cc = ac - rr * sg.tw;
    a_ok = t.r0 + rr < sg.hin && t.c0 + cc < sg.win;
    a_src = x + ((int64_t(t.img0) * p.Cin + g * sg.cin_g + ar) * sg.hin + t.r0 + rr) * sg.win + t.c0 + cc;
  } else {
    const int am = m0 + ac, img = am / sg.hw;
    a_ok = ac < sg.m_eff && am < sg.m_total;
    a_src = x + (int64_t(img) * p.Cin + g * sg.cin_g + ar) * sg.hw + (am - img * sg.hw);
  }
  const bool b_ok = bc < sg.n_eff && n0 + bc < sg.nc;
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
    if constexpr (kScalarB) {
      // An element a copy: 4-byte cp.async for fp32; half types load it (cp.async moves 4 bytes at least).
      constexpr int kElems = BK * Tl::BN / kThreads;
#pragma unroll
      for (int j = 0; j < kElems; ++j) {
        const int e = tid + j * kThreads, row = e / Tl::BN, col = e % Tl::BN;
        const bool ok = col < sg.n_eff && n0 + col < sg.nc && k0 + row < sg.cin_g;
        T* dst = st + BK * Tl::PA + row * Tl::PB + col;
        const T* src = w + (g * sg.cin_g + k0 + row) * sg.nc + n0 + col;
        if constexpr (sizeof(T) == 4) {
          cp_async4_zfill(dst, ok ? src : w, ok);
        } else {
          *dst = ok ? *src : static_cast<T>(0.f);
        }
      }
    } else {
#pragma unroll
      for (int j = 0; j < Tl::kBCopies; ++j) {
        const int row = br + j * kBStep;
        const bool ok = b_ok && k0 + row < sg.cin_g;
        cp_async16_zfill(st + b_dst + j * kBStep * Tl::PB, ok ? b_src + int64_t(k0 + j * kBStep) * sg.nc : w, ok);
      }
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
  // Gather: the tap tables lie past the fp32 tile, and where that is past the stage buffers too they are built now,
  // under the first copies' latency, rather than while the block's other warps wait at the epilogue's barrier (the
  // mainloop's first barrier orders them before their reads).
  float* cs = reinterpret_cast<float*>(smem_raw);
  const TapTables tt = tap_tables(reinterpret_cast<int*>(cs + Tl::BM * Tl::PC), sg);
  constexpr bool kEarlyTables = Tl::kStageBytes <= Tl::BM * Tl::PC * 4;
  auto owned = [&] { return sg.tiled ? tile_of(sg, mt) : Owned{m0 / sg.hw, 0, 0, 0, sg.hout, 0, sg.wout}; };
  if (kEarlyTables && sg.gather) build_tap_tables<Tl::PC>(tt, sg, owned(), tid);
  for (int kc = 0; kc < nchunks; ++kc) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // chunk kc is in; every warp is past chunk kc - 1, whose buffer the next copies reuse
    const int next = kc + kStages - 1;
    if (next < nchunks) load_stage(next, next % kStages);
    cp_async_commit();
    const T* st = smem + (kc % kStages) * Tl::kStageElems;
    mma_chunk<T, Tl, kStrict, kKParts>(acc, st, st + BK * Tl::PA, wm, kKParts == 2 ? 0 : wn * 32, kKParts == 2 ? wn : 0,
                                       lane);
  }

  if (sg.gather) {
    cp_async_wait<0>();
    __syncthreads();  // the stage buffers become the tile
    if constexpr (kKParts == 2) {
      if (wn == 0) stage_tile<Tl::PC, false>(acc, cs, wm, 0, lane);
      __syncthreads();
      if (wn == 1) stage_tile<Tl::PC, true>(acc, cs, wm, 0, lane);
    } else {
      stage_tile<Tl::PC, false>(acc, cs, wm, wn, lane);
    }
    // The tile's place again rather than kept in registers across the mainloop, which spilled in strict fp32.
    const Owned own = owned();
    if (!kEarlyTables) build_tap_tables<Tl::PC>(tt, sg, own, tid);
    __syncthreads();
    gather_sums<T, Tl::PC>(cs, tt, p, sg, g, own, n0, tid, bias, y);
  } else {
    store_shuffled<T>(acc, p, sg, g, m0, n0, wm, wn, lane, bias, y, pair);
  }
}

// Images past 128 pixels take the 256 x 64 tile (whole images of up to 256 pixels a block in gather). Past 256 the
// gather tiles each image, on the 256-pixel tile where an output channel's columns fit in its 64 (the halo a tile
// recomputes is then a smaller share), else on the 128-pixel one.
int warps_m(const ConvTParams& p) {
  if (cols_shuffle(p)) return 2;
  const int64_t hw = p.Hin * p.Win;
  return hw > 128 && (hw <= 256 || p.KH * p.KW <= 64) ? 4 : 2;
}

// Tiles of `t` input rows, origins `st` apart, to cover `n` rows: the last one reaches the end.
int64_t tiles_along(int64_t n, int64_t t, int64_t st) { return n <= t ? 1 : (n - t + st - 1) / st + 1; }

// channels: gather's output channels a block, at most what the column tile holds (0: that many). vec: elements a
// 16-byte copy. m_tiles is 0 where no tiling holds the gather's halo.
ColsGeom geometry(const ConvTParams& p, int wm, int vec, int channels = 0) {
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
  sg.tiled = sg.gather && sg.hw > bm;
  sg.n_eff = sg.gather ? (channels > 0 ? std::min(channels, bn / sg.kk) : bn / sg.kk) * sg.kk : bn;
  sg.n_tiles = sg.n_eff > 0 ? (sg.nc + sg.n_eff - 1) / sg.n_eff : 0;
  sg.scalar_b = sg.gather && (sg.nc % vec != 0 || sg.n_eff % vec != 0);
  sg.reach_h = (p.KH - 1) * p.dh;
  sg.reach_w = (p.KW - 1) * p.dw;
  sg.th = sg.sth = sg.hin;
  sg.tw = sg.stw = sg.win;
  sg.tiles_h = sg.tiles_w = 1;
  sg.own_h = sg.hout;
  sg.own_w = sg.wout;
  int64_t m_tiles = 0;
  if (sg.tiled) {
    // The tile shape (a width of whole 16-byte copies) that covers an image in the fewest tiles: each recomputes
    // the halo its neighbours share, reach / stride rows and columns, and its origins are copy-aligned.
    const int64_t halo_h = sg.reach_h / p.sh, halo_w = sg.reach_w / p.sw;
    int64_t best = 0;
    for (int tw = vec; tw <= bm; tw *= 2) {
      const int th = bm / tw;
      const int64_t sth = th - halo_h, stw = (tw - halo_w) / vec * vec;
      if (sth < 1 || stw < 1) continue;
      const int64_t n = tiles_along(p.Hin, th, sth) * tiles_along(p.Win, tw, stw);
      if (best != 0 && n >= best) continue;
      best = n;
      sg.th = th;
      sg.tw = tw;
      sg.sth = static_cast<int>(sth);
      sg.stw = static_cast<int>(stw);
      sg.tiles_h = static_cast<int>(tiles_along(p.Hin, th, sth));
      sg.tiles_w = static_cast<int>(tiles_along(p.Win, tw, stw));
    }
    m_tiles = p.N * best;
    sg.m_eff = bm;
    // Outputs a tile owns (upper bounds): the first tile's, an inner one's (st x stride), the last one's.
    auto most = [](int tiles, int st, int s, int pad, int64_t reach, int out) {
      if (tiles == 1) return out;
      const int64_t first = own_start(1, tiles, st, s, pad, reach, out);
      const int64_t last = out - own_start(tiles - 1, tiles, st, s, pad, reach, out);
      return static_cast<int>(std::min<int64_t>(out, std::max({first, int64_t(st) * s, last})));
    };
    if (best > 0) {
      sg.own_h = most(sg.tiles_h, sg.sth, sg.sh, sg.ph, sg.reach_h, sg.hout);
      sg.own_w = most(sg.tiles_w, sg.stw, sg.sw, sg.pw, sg.reach_w, sg.wout);
    }
  } else {
    sg.m_eff = sg.gather ? bm / sg.hw * sg.hw : bm;
    m_tiles = sg.m_eff > 0 ? (sg.m_total + sg.m_eff - 1) / sg.m_eff : 0;
  }
  sg.m_tiles = static_cast<int>(std::min<int64_t>(m_tiles, INT32_MAX));
  return sg;
}

// Gather's output channels a block. All the column tile holds (the most whose columns are whole 16-byte copies,
// where the weights' rows are), but where that leaves most SMs idle
// (dcgan-128-64-n1: 16 blocks of 4 channels on 132 SMs) halved while the grid stays within one block an SM: the
// blocks then run fewer of the gather's per-output sums, the part of such a layer that runs on few warps an SM
// (ncu: 60% of its stall samples), at the price of multiply-adds on columns they drop. GPU time on an H200, 4 -> 1
// channels a block: dcgan-128-64-n1 TF32 19.4 -> 14.0 us, fp16/bf16 16.6 -> 11.3, strict 25.3 -> 20.0 (cuDNN 14.4,
// 17.5, 14.4; docs/kernel-notes.md, session 25). A forced count is taken as far as the tile and 16-byte column
// copies allow.
int pick_channels(const ConvTParams& p, int wm, int elem_bytes, int forced, int device) {
  if (cols_shuffle(p)) return 0;
  const int kk = static_cast<int>(p.KH * p.KW), natural = 256 / wm / kk, vec = 16 / elem_bytes;
  const bool by_element = p.Cout_g * kk % vec != 0;  // the weights' rows are off 16 bytes: any count copies alike
  auto blocks = [&](int c) { const ColsGeom sg = geometry(p, wm, vec, c); return p.groups * sg.m_tiles * sg.n_tiles; };
  auto ok = [&](int c) { return c >= 1 && c <= natural && (by_element || c * kk % vec == 0) && blocks(c) < (int64_t(1) << 31); };
  if (forced != 0 && ok(forced)) return forced;
  int c = natural;
  while (c > 1 && !ok(c)) --c;
  if (!ok(c)) return natural;  // no count copies whole: by element
  if (forced != 0) return c;
  const int sms = sm_count(device);
  while (c > 1 && ok(c / 2) && blocks(c / 2) <= sms) c /= 2;
  return c;
}

template <typename T, int KB, int WM, bool kStrict, bool kScalarB, int kKParts = 1>
void launch_typed(const ConvTParams& p, const ColsGeom& sg, const at::Tensor& x, const at::Tensor& w,
                  const at::Tensor& b, at::Tensor& out, cudaStream_t stream) {
  using Tl = Tile<T, KB, WM>;
  const int64_t blocks = p.groups * sg.m_tiles * sg.n_tiles;
  if (blocks == 0) return;
  T* y = out.mutable_data_ptr<T>();
  // A column pair is two adjacent outputs of one row where the kernel width is even; one store needs the pair aligned.
  const bool pair = p.KW % 2 == 0 && reinterpret_cast<uintptr_t>(y) % (2 * sizeof(T)) == 0;
  auto kernel = convt_cols_kernel<T, KB, WM, kStrict, kScalarB, kKParts>;
  allow_dynamic_smem(kernel, Tl::kSmemBytes);
  kernel<<<static_cast<unsigned>(blocks), kThreads, Tl::kSmemBytes, stream>>>(
      p, sg, x.const_data_ptr<T>(), w.const_data_ptr<T>(), b.defined() ? b.const_data_ptr<T>() : nullptr, y, pair);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T, int WM, bool kStrict>
void launch_depth(const ConvTParams& p, const ColsGeom& sg, const at::Tensor& x, const at::Tensor& w,
                  const at::Tensor& b, at::Tensor& out, int depth, cudaStream_t stream) {
  if (sg.scalar_b) {  // gather only, 64 bytes of k a stage: its element copies are a stage's most instructions
    launch_typed<T, 1, WM, kStrict, true>(p, sg, x, w, b, out, stream);
  } else if (WM == 4 && sg.gather && sg.n_eff <= 32 && depth != 2) {  // one warp column's worth: split its k-steps
    if constexpr (WM == 4) launch_typed<T, 1, WM, kStrict, false, 2>(p, sg, x, w, b, out, stream);
  } else if (depth == 2) {
    launch_typed<T, 2, WM, kStrict, false>(p, sg, x, w, b, out, stream);
  } else {
    launch_typed<T, 1, WM, kStrict, false>(p, sg, x, w, b, out, stream);
  }
}

template <typename T, bool kStrict = false>
void launch_shape(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                  at::Tensor& out, int depth, int channels, cudaStream_t stream) {
  const int wm = warps_m(p), vec = 16 / static_cast<int>(sizeof(T));
  const ColsGeom sg = geometry(p, wm, vec, pick_channels(p, wm, sizeof(T), channels, x.get_device()));
  // 128 bytes of k a stage past 128 input channels a group (unet-512-256-n8 fp16 0.178 against 0.187 ms with 64,
  // bf16 0.178 against 0.187; TF32 0.323 against 0.347), but not on the 256-pixel tile, where it spills. TF32 on the
  // shuffle (always the 128-pixel tile) from 128 channels too: unet-128-64-n1 55.1-55.8 against 59.8-60.4 us of GPU
  // time alone on the H100 (session 35, two calls); fp16 gains nothing there (35.4 against 35.7) and keeps 64.
  const bool tf32_shuffle = std::is_same_v<T, float> && !kStrict && cols_shuffle(p) && p.Cin_g >= 128;
  if (depth == 0) depth = wm == 2 && (p.Cin_g > 128 || tf32_shuffle) ? 2 : 1;
  if (wm == 4) {
    launch_depth<T, 4, kStrict>(p, sg, x, w, b, out, depth, stream);
  } else {
    launch_depth<T, 2, kStrict>(p, sg, x, w, b, out, depth, stream);
  }
}

}  // namespace

bool cols_shuffle(const ConvTParams& p) {
  return p.KH == p.sh && p.KW == p.sw && p.ph == 0 && p.pw == 0 && p.oph == 0 && p.opw == 0 && p.dh == 1 && p.dw == 1;
}

bool cols_tiled(const ConvTParams& p) { return !cols_shuffle(p) && p.Hin * p.Win > warps_m(p) * 64; }

bool cols_supports(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w) {
  const at::ScalarType dt = x.scalar_type();
  if (dt != at::kHalf && dt != at::kBFloat16 && dt != at::kFloat) return false;
  const int64_t vec = 16 / static_cast<int64_t>(x.element_size()), lim = int64_t(1) << 30;
  const int64_t hw = p.Hin * p.Win, nc = p.Cout_g * p.KH * p.KW;
  if (p.N * hw >= lim || nc >= lim || p.Cin_g >= lim) return false;
  if (reinterpret_cast<uintptr_t>(x.const_data_ptr()) % 16 != 0 || reinterpret_cast<uintptr_t>(w.const_data_ptr()) % 16 != 0)
    return false;
  const int wm = warps_m(p), bm = wm * 64, bn = 256 / wm;
  if (cols_shuffle(p)) {
    if (hw % vec != 0 || nc % vec != 0) return false;  // 16-byte input planes and weight rows
    if (p.Wout >= (int64_t(1) << 31)) return false;        // a pixel's 32-bit column offset, iw x kw
  } else {
    // Gather: whole images a block (16-byte planes) or tiles of one (16-byte rows), whole output channels.
    if (p.KH * p.KW > bn || (hw <= bm ? hw % vec : p.Win % vec) != 0) return false;
    if (p.sh >= lim || p.sw >= lim || p.ph >= lim || p.pw >= lim || p.dh >= lim || p.dw >= lim) return false;
    // 32-bit tap arithmetic: an output index plus the padding, and (K - 1) x dilation.
    if (p.Hout * p.Wout >= (int64_t(1) << 31) || p.Hout + p.ph >= (int64_t(1) << 31) || p.Wout + p.pw >= (int64_t(1) << 31) ||
        (p.KH - 1) * p.dh >= lim || (p.KW - 1) * p.dw >= lim)
      return false;
  }
  const ColsGeom sg = geometry(p, wm, static_cast<int>(vec));
  if (sg.m_tiles == 0) return false;
  if (sg.gather && int64_t(sg.own_h) * (p.KH + 1) + int64_t(sg.own_w) * (p.KW + 1) > kTapTable) return false;
  return p.groups * sg.m_tiles * sg.n_tiles < (int64_t(1) << 31);
}

bool cols_weights_by_element(const ConvTParams& p, const at::Tensor& x) {
  if (cols_shuffle(p)) return false;
  const int wm = warps_m(p), vec = 16 / static_cast<int>(x.element_size());
  return geometry(p, wm, vec, pick_channels(p, wm, static_cast<int>(x.element_size()), 0, x.get_device())).scalar_b;
}

void launch_cols(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 bool tf32, int depth, int channels, cudaStream_t stream) {
  CONVT_CHECK(depth >= 0 && depth <= 3, "convt: the columns kernel stages 1 or 2 x 64 bytes of k (3: its wgmma shuffle), not ", depth);
  CONVT_CHECK(channels >= 0, "convt: the columns kernel's output channels a block must be positive (or 0, its pick), not ", channels);
  // The shuffle on wgmma where it applies, by default or forced (3); forced where it does not, the kernel's own pick.
  // GPU time alone on an H200 beside this kernel's 128 bytes of k (session 52, docs/benchmarks/gpu-time-s52.md):
  // unet-128-64-n1 TF32 38.8 against 53.7 us, fp16 23.6 against 33.8, bf16 23.6 against 33.7 (cuDNN 138, 79, 79).
  if (depth == 0 || depth == 3) {
    if (colsw_supports(p, x, w, tf32)) {
      launch_colsw(p, x, w, b, out, stream);
      return;
    }
    depth = 0;
  }
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
