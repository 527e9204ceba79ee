// The edge kernel (convt_edge.h). A thread owns kRR output rows x COLS columns x kTN output channels of one image and
// group: per input channel and kernel column it reads its three kernel rows' kTN weights (one 8-byte load each, from
// weights packed [channel][tap][32 output channels] once a call) and the six staged rows' COLS values (shared-memory
// broadcasts: the 16 lanes of a row group read one address), for 3 x kRR x COLS x kTN products. kb71's 2-column
// edge (8 x 32 x 514 x 2 outputs, 288 products each) is 2.4 M warp FFMAs, ~2 us at the FFMA rate; the window
// kernel's own last strip took ~38 us (264 tiles of 16 rows x 64 columns, 2 of them wanted; session 59).
// Each chunk of input channels stages its weights by cp.async (all in flight at once) and its halo rows by batched
// loads, then computes from shared memory; kSplit warp sets take every kSplit-th channel of a chunk for the same
// tiles and sum through shared memory at the end, so kb71's edge runs ~4 warps a scheduler, not ~1 (form 4; session
// 61, H200: kb71's edge 21.2 us TF32 and 24.1 fp16; ncu 3.5 warps and 0.64 instructions issued a scheduler a cycle.
// Form 5 cut staging's instructions by ~900 a warp and was no faster, so what paces a block is its weights' arrival
// and the drain of its partial-sector stores, kernel-notes v58). Session 60's three forms lost (kb71's edge):
// - a lane per output channel, kRR x COLS products a read: 36-38 us, 11.2 K instructions a warp at 4.6 cycles each
//   (ncu, call C), one or two warps a scheduler;
// - this thread tile with the weights read from global memory as the loop went: 48 us, a block ~34 us alone. Every
//   kernel column waited out an L2 read of its weights (each SM reads all of them once), ~96 in a row.
// - form 3, this file without the warp sets: 36 us, 21.5 us a block alone where ~7 was predicted (v57: one warp a
//   scheduler waiting out each shared-memory load fits the numbers; not profiled).
#include "convt_edge.h"

#include <c10/cuda/CUDAException.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "smem_attr.h"

namespace convt {
namespace {

#include "cp_async.cuh"

constexpr int kKH = 3;
constexpr int kRR = 4;                          // output rows a thread
constexpr int kTN = 2;                          // output channels a thread
constexpr int kCoPad = 32;                      // output channels a packed weight row (zeros past the group's)
constexpr int kLanesN = kCoPad / kTN;           // lanes across the output channels
constexpr int kWarps = 2;                       // warps across a block's rows (kb71: 264 blocks, 2 an SM, one wave)
constexpr int kSplit = 4;                       // warp sets over the input channels, summed at the end
constexpr int kThreads = kWarps * kSplit * 32;
constexpr int kTile = kWarps * 32;              // threads a set
constexpr int kRows = kRR * (32 / kLanesN) * kWarps;  // output rows a block
constexpr int kStaged = kRows + kKH - 1;        // input rows a block stages
constexpr int kMaxCols = 4;                     // output columns a block (registers at 512 threads); more take several
constexpr int kSmemBytes = 96 * 1024;           // two blocks an SM (kb71's 32 channels: 48 KB, one chunk)
constexpr int kBatch = 16;                      // halo loads a thread has in flight while staging

struct EdgeGeom {
  int n, hin, win, hout, wout, kw, ph, pw, dw;
  int cin, cout, cin_g, cout_g;
  int col0, cols;   // the edge: output columns [col0, col0 + cols)
  int pieces;       // blocks across the edge
  int segw;         // staged columns an input row: COLS + (kw - 1) * dw
  int rpitch;       // a staged row's pitch: odd, so a warp's two row groups read different banks
  int cc;           // input channels a staged chunk: weights and halo rows (0: one channel does not fit)
  int row_blocks;   // blocks down an image
  int smem_bytes;
};

int cols_bucket(int cols) { return cols <= 2 ? 2 : kMaxCols; }

EdgeGeom geometry(const ConvTParams& p, int col0) {
  EdgeGeom e{};
  e.n = static_cast<int>(p.N);
  e.hin = static_cast<int>(p.Hin);
  e.win = static_cast<int>(p.Win);
  e.hout = static_cast<int>(p.Hout);
  e.wout = static_cast<int>(p.Wout);
  e.kw = static_cast<int>(p.KW);
  e.ph = static_cast<int>(p.ph);
  e.pw = static_cast<int>(p.pw);
  e.dw = static_cast<int>(p.dw);
  e.cin = static_cast<int>(p.Cin);
  e.cout = static_cast<int>(p.Cout);
  e.cin_g = static_cast<int>(p.Cin_g);
  e.cout_g = static_cast<int>(p.Cout_g);
  e.col0 = col0;
  e.cols = e.wout - col0;
  e.pieces = (e.cols + kMaxCols - 1) / kMaxCols;
  // The staged segment covers COLS columns even where the edge is narrower, so the unrolled reads stay in the row.
  e.segw = cols_bucket(std::min(e.cols, kMaxCols)) + (e.kw - 1) * e.dw;
  e.rpitch = e.segw | 1;
  const int64_t per_channel = int64_t(kKH) * e.kw * kCoPad + int64_t(kStaged) * e.rpitch;  // floats
  e.cc = static_cast<int>(std::min<int64_t>(e.cin_g, kSmemBytes / 4 / per_channel));
  e.row_blocks = (e.hout + kRows - 1) / kRows;
  const int red_bytes = (kSplit - 1) * kTile * cols_bucket(std::min(e.cols, kMaxCols)) * kTN * 4;
  e.smem_bytes = std::max(static_cast<int>(e.cc * per_channel * 4), red_bytes);
  return e;
}

// Weights [group x channel][tap][kCoPad] as fp32, zeros past the group's output channels.
template <typename T>
__global__ void edge_pack_kernel(const T* __restrict__ w, float* __restrict__ wt, int64_t total, int cout_g, int taps) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int co = static_cast<int>(i % kCoPad);
    const int64_t r = i / kCoPad, ci = r / taps;
    wt[i] = co < cout_g ? static_cast<float>(w[(ci * cout_g + co) * taps + (r - ci * taps)]) : 0.f;
  }
}

template <typename T, int COLS>
__global__ void __launch_bounds__(kThreads, 2) convt_edge_kernel(const EdgeGeom e, const T* __restrict__ x,
                                                                 const float* __restrict__ wt,
                                                                 const T* __restrict__ bias, T* __restrict__ y) {
  extern __shared__ __align__(16) float sm[];
  // Set ks sums input channels ks, ks + kSplit, ... of each chunk for the tile of thread t = tid % kTile: one warp a
  // tile left kb71's edge at ~1 warp a scheduler, each shared-memory load waited out (v57).
  const int tid = threadIdx.x, t = tid % kTile, ks = tid / kTile;
  const int co = (t % kLanesN) * kTN, row0 = (t / kLanesN) * kRR;
  int b = blockIdx.x;
  const int piece = b % e.pieces;
  b /= e.pieces;
  const int rb = b % e.row_blocks;
  b /= e.row_blocks;
  const int img = b % e.n, g = b / e.n;
  const int c0 = e.col0 + piece * kMaxCols, cols = min(kMaxCols, e.col0 + e.cols - c0);
  const int oy0 = rb * kRows, iy0 = oy0 + e.ph - (kKH - 1), ix0 = c0 + e.pw - (e.kw - 1) * e.dw;
  const int taps = kKH * e.kw;
  const T* xg = x + (int64_t(img) * e.cin + int64_t(g) * e.cin_g) * e.hin * e.win;
  const float* wg = wt + int64_t(g) * e.cin_g * taps * kCoPad;
  float* ws = sm;                                // [channel][tap][kCoPad]
  float* xs = sm + e.cc * taps * kCoPad;         // [channel][staged row][column], rows at rpitch

  float acc[kRR][COLS][kTN] = {};
  for (int ci0 = 0; ci0 < e.cin_g; ci0 += e.cc) {
    const int nc = min(e.cc, e.cin_g - ci0);
    __syncthreads();  // the last chunk's reads are done
    const int nth = blockDim.x, w16 = nc * taps * (kCoPad / 4);
    const float* wc = wg + int64_t(ci0) * taps * kCoPad;
    for (int i = tid; i < w16; i += nth) cp_async16_zfill(ws + 4 * i, wc + 4 * i, true);
    cp_async_commit();
    const int xn = nc * kStaged * e.segw;
    for (int i0 = tid; i0 < xn; i0 += kBatch * nth) {
      float v[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int i = i0 + u * nth, r = i / e.segw, q = i - r * e.segw;
        const int ci = r / kStaged, iy = iy0 + (r - ci * kStaged), ix = ix0 + q;
        v[u] = i < xn && iy >= 0 && iy < e.hin && ix >= 0 && ix < e.win
                   ? static_cast<float>(xg[(int64_t(ci0 + ci) * e.hin + iy) * e.win + ix])
                   : 0.f;
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int i = i0 + u * nth, r = i / e.segw;
        if (i < xn) xs[r * e.rpitch + (i - r * e.segw)] = v[u];
      }
    }
    cp_async_wait<0>();
    __syncthreads();
    for (int ci = ks; ci < nc; ci += kSplit) {
      const float* xr = xs + (ci * kStaged + row0) * e.rpitch;
      const float* wr = ws + ci * taps * kCoPad + co;
      for (int kx = 0; kx < e.kw; ++kx) {
        // staged row jj feeds output row jj - 2 + kh through kernel row kh; column c reads kx's tap at c + shift
        const float2 w0 = *reinterpret_cast<const float2*>(wr + kx * kCoPad);
        const float2 w1 = *reinterpret_cast<const float2*>(wr + (e.kw + kx) * kCoPad);
        const float2 w2 = *reinterpret_cast<const float2*>(wr + (2 * e.kw + kx) * kCoPad);
        const float* xq = xr + (e.kw - 1 - kx) * e.dw;
        float xv[kRR + kKH - 1][COLS];  // every read before the first product
#pragma unroll
        for (int jj = 0; jj < kRR + kKH - 1; ++jj)
#pragma unroll
          for (int c = 0; c < COLS; ++c) xv[jj][c] = xq[jj * e.rpitch + c];
#pragma unroll
        for (int jj = 0; jj < kRR + kKH - 1; ++jj) {
#pragma unroll
          for (int c = 0; c < COLS; ++c) {
            const float v = xv[jj][c];
            if (jj >= 2) {
              acc[jj - 2][c][0] = fmaf(v, w0.x, acc[jj - 2][c][0]);
              acc[jj - 2][c][1] = fmaf(v, w0.y, acc[jj - 2][c][1]);
            }
            if (jj >= 1 && jj - 1 < kRR) {
              acc[jj - 1][c][0] = fmaf(v, w1.x, acc[jj - 1][c][0]);
              acc[jj - 1][c][1] = fmaf(v, w1.y, acc[jj - 1][c][1]);
            }
            if (jj < kRR) {
              acc[jj][c][0] = fmaf(v, w2.x, acc[jj][c][0]);
              acc[jj][c][1] = fmaf(v, w2.y, acc[jj][c][1]);
            }
          }
        }
      }
    }
  }
  // Sets 1.. hand their sums to set 0 a row at a time, through the staging space (every set is past its reads).
  float* red = sm;  // [set - 1][kTile][COLS x kTN]
#pragma unroll
  for (int rr = 0; rr < kRR; ++rr) {
    __syncthreads();
    if (ks > 0) {
#pragma unroll
      for (int c = 0; c < COLS; ++c)
#pragma unroll
        for (int n = 0; n < kTN; ++n) red[((ks - 1) * kTile + t) * (COLS * kTN) + c * kTN + n] = acc[rr][c][n];
    }
    __syncthreads();
    if (ks == 0) {
#pragma unroll
      for (int s2 = 0; s2 < kSplit - 1; ++s2)
#pragma unroll
        for (int c = 0; c < COLS; ++c)
#pragma unroll
          for (int n = 0; n < kTN; ++n) acc[rr][c][n] += red[(s2 * kTile + t) * (COLS * kTN) + c * kTN + n];
    }
  }
  if (ks > 0) return;
#pragma unroll
  for (int n = 0; n < kTN; ++n) {
    if (co + n >= e.cout_g) break;
    const int oc = g * e.cout_g + co + n;
    const float bv = bias != nullptr ? static_cast<float>(bias[oc]) : 0.f;
    const int oy = oy0 + row0;
    T* yp = y + ((int64_t(img) * e.cout + oc) * e.hout + oy) * e.wout + c0;
#pragma unroll
    for (int rr = 0; rr < kRR; ++rr) {
      if (oy + rr >= e.hout) break;
#pragma unroll
      for (int c = 0; c < COLS; ++c)
        if (c < cols) yp[int64_t(rr) * e.wout + c] = static_cast<T>(acc[rr][c][n] + bv);
    }
  }
}

template <typename T>
void launch_typed(const EdgeGeom& e, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                  cudaStream_t stream) {
  const int64_t total = int64_t(e.cin) * kKH * e.kw * kCoPad;
  at::Tensor wt = at::empty({total}, x.options().dtype(at::kFloat));
  const unsigned pack_blocks = static_cast<unsigned>(std::min<int64_t>((total + 255) / 256, 4096));
  edge_pack_kernel<T><<<pack_blocks, 256, 0, stream>>>(w.const_data_ptr<T>(), wt.mutable_data_ptr<float>(), total,
                                                       e.cout_g, kKH * e.kw);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const int64_t blocks = int64_t(e.pieces) * e.row_blocks * e.n * (e.cin / e.cin_g);
  auto go = [&](auto kernel) {
    allow_dynamic_smem(kernel, e.smem_bytes);
    kernel<<<static_cast<unsigned>(blocks), kThreads, e.smem_bytes, stream>>>(
        e, x.const_data_ptr<T>(), wt.const_data_ptr<float>(), b.defined() ? b.const_data_ptr<T>() : nullptr,
        out.mutable_data_ptr<T>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  };
  switch (cols_bucket(std::min(e.cols, kMaxCols))) {
    case 2: go(convt_edge_kernel<T, 2>); break;
    default: go(convt_edge_kernel<T, kMaxCols>); break;
  }
}

}  // namespace

bool edge_supports(const ConvTParams& p, int elem) {
  if (p.KH != kKH || p.dh != 1 || p.sh != 1 || p.sw != 1 || p.Cout_g > 32 || (elem != 2 && elem != 4)) return false;
  const EdgeGeom e = geometry(p, static_cast<int>(std::max<int64_t>(p.Wout - kMaxCols, 0)));  // the widest piece
  return e.cc >= 1 && int64_t(p.N) * p.groups * ((p.Hout + kRows - 1) / kRows) * ((p.Wout + kMaxCols - 1) / kMaxCols) <
                          (int64_t(1) << 31);
}

void launch_edge(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 int col0, cudaStream_t stream) {
  const EdgeGeom e = geometry(p, col0);
  TORCH_CHECK(e.cc >= 1 && e.cols > 0, "convt: the edge kernel cannot take this layer");
  if (int64_t(e.n) * e.hout == 0 || e.cout == 0) return;
  switch (x.scalar_type()) {
    case at::kFloat: launch_typed<float>(e, x, w, b, out, stream); break;
    case at::kHalf: launch_typed<at::Half>(e, x, w, b, out, stream); break;
    case at::kBFloat16: launch_typed<at::BFloat16>(e, x, w, b, out, stream); break;
    default: TORCH_CHECK(false, "convt: the edge kernel takes float32, float16 and bfloat16");
  }
}

}  // namespace convt
