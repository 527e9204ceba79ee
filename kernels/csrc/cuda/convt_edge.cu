// The edge kernel (convt_edge.h). A warp is kRR output rows of one image and group across a piece of the edge's
// columns, its lanes the output channels: a staged input value is one shared-memory broadcast feeding 32 lanes'
// products, and a lane's kRR x COLS accumulators let one read of a kernel column's three weights and of each staged
// row segment serve the three output rows that row feeds. kb71's 2-column edge (8 x 32 x 514 x 2 outputs, 288
// products each) is ~0.15 GFLOP and ~4 MB of sectors: a few microseconds, where the window kernel's own last strip
// took ~38 us (264 tiles of 16 rows x 64 columns, 2 of them wanted; session 59).
// A block stages each chunk's weights and halo in kBatch loads a thread before their shared-memory stores: staged one
// at a time (session 60, call A) every load waited out its L2 or DRAM latency, and a block took ~15-20 us whatever
// the layer's size (kb71's edge 36 us, a 34-block edge 18).
#include "convt_edge.h"

#include <c10/cuda/CUDAException.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

namespace convt {
namespace {

constexpr int kKH = 3;
constexpr int kRR = 4;                      // output rows a warp
constexpr int kWarps = 4;
constexpr int kRows = kRR * kWarps;         // output rows a block
constexpr int kStaged = kRows + kKH - 1;    // input rows a block stages
constexpr int kMaxCols = 16;                // output columns a block; a wider edge takes several blocks across
constexpr int kSmemBytes = 48 * 1024;       // no opt-in: several blocks an SM
constexpr int kBatch = 16;                  // loads a thread has in flight while staging

struct EdgeGeom {
  int n, hin, win, hout, wout, kw, ph, pw, dw;
  int cin, cout, cin_g, cout_g;
  int col0, cols;   // the edge: output columns [col0, col0 + cols)
  int pieces;       // blocks across the edge
  int segw;         // staged columns an input row: COLS + (kw - 1) * dw
  int tpitch;       // an output channel's staged weights: the taps, made odd so a warp's lanes miss no bank
  int cc;           // input channels a staged chunk (0: one channel does not fit)
  int row_blocks;   // blocks down an image
  int smem_bytes;
};

int cols_bucket(int cols) { return cols <= 2 ? 2 : cols <= 4 ? 4 : cols <= 8 ? 8 : kMaxCols; }

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
  e.tpitch = (kKH * e.kw) | 1;
  const int64_t per_channel = int64_t(e.tpitch) * e.cout_g + int64_t(kStaged) * e.segw;  // floats
  e.cc = static_cast<int>(std::min<int64_t>(e.cin_g, kSmemBytes / 4 / per_channel));
  e.row_blocks = (e.hout + kRows - 1) / kRows;
  e.smem_bytes = static_cast<int>(e.cc * per_channel * 4);
  return e;
}

template <typename T, int COLS>
__global__ void __launch_bounds__(kWarps * 32) convt_edge_kernel(const EdgeGeom e, const T* __restrict__ x,
                                                                 const T* __restrict__ w, const T* __restrict__ bias,
                                                                 T* __restrict__ y) {
  extern __shared__ float sm[];
  const int tid = threadIdx.x, co = tid & 31, warp = tid >> 5;
  int b = blockIdx.x;
  const int piece = b % e.pieces;
  b /= e.pieces;
  const int rb = b % e.row_blocks;
  b /= e.row_blocks;
  const int img = b % e.n, g = b / e.n;
  const int c0 = e.col0 + piece * kMaxCols, cols = min(kMaxCols, e.col0 + e.cols - c0);
  const int oy0 = rb * kRows, iy0 = oy0 + e.ph - (kKH - 1), ix0 = c0 + e.pw - (e.kw - 1) * e.dw;
  const int taps = kKH * e.kw;
  float* ws = sm;                            // [channel][output channel][kernel row][kernel column], pitch tpitch
  float* xs = sm + e.cc * e.cout_g * e.tpitch;  // [channel][staged row][column]
  const T* xg = x + (int64_t(img) * e.cin + int64_t(g) * e.cin_g) * e.hin * e.win;
  const T* wg = w + int64_t(g) * e.cin_g * e.cout_g * taps;

  float acc[kRR][COLS] = {};
  for (int ci0 = 0; ci0 < e.cin_g; ci0 += e.cc) {
    const int nc = min(e.cc, e.cin_g - ci0);
    __syncthreads();  // the last chunk's reads are done
    const T* wc = wg + int64_t(ci0) * e.cout_g * taps;  // the chunk's weights lie contiguous
    const int wn = nc * e.cout_g * taps, xn = nc * kStaged * e.segw, nth = blockDim.x;
    for (int i0 = tid; i0 < wn; i0 += kBatch * nth) {
      float v[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int i = i0 + u * nth;
        v[u] = i < wn ? static_cast<float>(wc[i]) : 0.f;
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int i = i0 + u * nth, row = i / taps;
        if (i < wn) ws[row * e.tpitch + (i - row * taps)] = v[u];
      }
    }
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
        const int i = i0 + u * nth;
        if (i < xn) xs[i] = v[u];
      }
    }
    __syncthreads();
    if (co < e.cout_g) {
      for (int ci = 0; ci < nc; ++ci) {
        const float* xr = xs + (ci * kStaged + warp * kRR) * e.segw;
        const float* wr = ws + (ci * e.cout_g + co) * e.tpitch;
        for (int kx = 0; kx < e.kw; ++kx) {
          // staged row jj feeds output row jj - 2 + kh through kernel row kh; column c reads kx's tap at c + shift
          const float w0 = wr[kx], w1 = wr[e.kw + kx], w2 = wr[2 * e.kw + kx];
          const float* xq = xr + (e.kw - 1 - kx) * e.dw;
#pragma unroll
          for (int jj = 0; jj < kRR + kKH - 1; ++jj) {
#pragma unroll
            for (int c = 0; c < COLS; ++c) {
              const float v = xq[jj * e.segw + c];
              if (jj >= 2) acc[jj - 2][c] = fmaf(v, w0, acc[jj - 2][c]);
              if (jj >= 1 && jj - 1 < kRR) acc[jj - 1][c] = fmaf(v, w1, acc[jj - 1][c]);
              if (jj < kRR) acc[jj][c] = fmaf(v, w2, acc[jj][c]);
            }
          }
        }
      }
    }
  }
  if (co >= e.cout_g) return;
  const int oc = g * e.cout_g + co;
  const float bv = bias != nullptr ? static_cast<float>(bias[oc]) : 0.f;
  const int oy = oy0 + warp * kRR;
  T* yp = y + ((int64_t(img) * e.cout + oc) * e.hout + oy) * e.wout + c0;
#pragma unroll
  for (int rr = 0; rr < kRR; ++rr) {
    if (oy + rr >= e.hout) break;
#pragma unroll
    for (int c = 0; c < COLS; ++c)
      if (c < cols) yp[int64_t(rr) * e.wout + c] = static_cast<T>(acc[rr][c] + bv);
  }
}

template <typename T>
void launch_typed(const EdgeGeom& e, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                  cudaStream_t stream) {
  const int64_t blocks = int64_t(e.pieces) * e.row_blocks * e.n * (e.cin / e.cin_g);
  auto go = [&](auto kernel) {
    kernel<<<static_cast<unsigned>(blocks), kWarps * 32, e.smem_bytes, stream>>>(
        e, x.const_data_ptr<T>(), w.const_data_ptr<T>(), b.defined() ? b.const_data_ptr<T>() : nullptr,
        out.mutable_data_ptr<T>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  };
  switch (cols_bucket(std::min(e.cols, kMaxCols))) {
    case 2: go(convt_edge_kernel<T, 2>); break;
    case 4: go(convt_edge_kernel<T, 4>); break;
    case 8: go(convt_edge_kernel<T, 8>); break;
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
