// The FFMA path for few output channels a group (1-4: FSRCNN's last layer, an
// RGB output): nothing there for a channel tile to reuse, so the general FFMA
// kernel paid a weight read from shared memory and an input read per FMA (ncu,
// fsrcnn-56-1-n1: 286 us, the shared-memory scoreboard 3.7 of 8.2 cycles a
// warp issue). Here a thread owns a column of 4 or 8 outputs of one phase at one
// output column, for every channel of its group. Within a phase the row taps
// read consecutive input rows (height dilation 1: tap i reads row m + a0 - i),
// so per input channel and width tap the thread loads one window of
// rows + taps - 1 input values into registers and every height tap reads its
// rows from there; the lanes of a warp take adjacent columns, so each window
// row is one coalesced load. Weights are uniform across the block: cached
// broadcast loads.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAException.h>

#include "../convt_params.h"
#include "convt_rows.h"
#include "smem_attr.h"

namespace convt {
namespace {

// Warps a block: 4, or the split where it is 8 (a block covers 32 x warps / split threads' outputs).
int block_warps(int split) { return split > 4 ? split : 4; }

// split: warps sharing one thread's outputs, each over every split-th input channel, summed through shared
// memory at the end. FSRCNN's last layer (56 channels, one output) and an RGB output (64 channels, batch 64)
// leave under 16 warps an SM at one thread a column: each thread then walks every channel serially with its
// loads exposed; split warps multiply the threads and divide the walk.
// Two blocks of 8 warps an SM at least: 128 registers (the unrolled channel loop keeps two windows in flight).
template <typename scalar_t, typename acc_t, int CO_T, int NTH, int ROWS>
__global__ void __launch_bounds__(256, 2)
    convt_rows_kernel(const ConvTParams p, const scalar_t* __restrict__ x, const scalar_t* __restrict__ w,
                      const scalar_t* __restrict__ bias, scalar_t* __restrict__ y, int split) {
  constexpr int kWin = ROWS + NTH - 1;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int part = warp % split;  // this warp's share of the input channels
  const int64_t phases_w = p.sw < p.Wout ? p.sw : p.Wout;
  const int64_t rh = blockIdx.y / phases_w, rw = blockIdx.y % phases_w;
  const int64_t g = blockIdx.z;
  const int64_t Mh = phase_extent(rh, p.sh, p.Hout), Mw = phase_extent(rw, p.sw, p.Wout);
  const int64_t strips = (Mh + ROWS - 1) / ROWS;
  const int64_t q = (int64_t(blockIdx.x) * (blockDim.x / 32 / split) + warp / split) * 32 + lane;
  const bool active = Mw > 0 && q < p.N * strips * Mw;
  if (!active && split == 1) return;  // no barrier without a split: a thread past the phase just leaves
  const int64_t mw = active ? q % Mw : 0, n = active ? q / Mw / strips : 0, mh0 = active ? (q / Mw) % strips * ROWS : 0;

  acc_t acc[CO_T][ROWS];
#pragma unroll
  for (int c = 0; c < CO_T; ++c)
#pragma unroll
    for (int r = 0; r < ROWS; ++r) acc[c][r] = acc_t(0);

  const PhaseTaps th = phase_taps(rh, p.ph, p.sh, p.dh, p.KH);
  const PhaseTaps tw = phase_taps(rw, p.pw, p.sw, p.dw, p.KW);
  if (active && th.k0 < p.KH && tw.k0 < p.KW) {  // else a pure fill: bias or zero
    const int nth = static_cast<int>(phase_tap_count(th, p.KH));
    const int64_t low = mh0 + tap_offset(rh, p.ph, p.sh, p.dh, th.k0) - (nth - 1);  // the window's first row
    const int64_t HWin = p.Hin * p.Win, KK = p.KH * p.KW, w_ci = p.Cout_g * KK;
    // Window rows inside the image: a mask, so the loop over channels has no bounds arithmetic.
    unsigned in_rows = 0;
#pragma unroll
    for (int u = 0; u < kWin; ++u) in_rows |= (u < ROWS + nth - 1 && low + u >= 0 && low + u < p.Hin) ? 1u << u : 0u;
    // Weight offset of each height tap, counted from the last tap (its rows start at window row i).
    int64_t w_tap[NTH];
#pragma unroll
    for (int i = 0; i < NTH; ++i) w_tap[i] = i < nth ? (th.k0 + (nth - 1 - i) * th.step) * p.KW : 0;
    const scalar_t* x_n = x + (n * p.Cin + g * p.Cin_g + part) * HWin + low * p.Win;
    const scalar_t* w_g = w + (g * p.Cin_g + part) * w_ci;
    const int64_t x_step = split * HWin, w_step = split * w_ci;
    // Width taps innermost: a channel's taps read the same window rows shifted by a column, so after the
    // first tap they hit L1 (a tap-outer loop re-reads every channel's rows from L2: by count about 0.5 GB
    // of loads for fsrcnn-56-1-n1's 2.4 MB output). Tap j reads input column iw0 - j * diw.
    const int64_t iw0 = mw + tap_offset(rw, p.pw, p.sw, p.dw, tw.k0), diw = tw.step * p.dw / p.sw;
    const scalar_t* x_c = x_n;
    const scalar_t* w_c = w_g;
    for (int64_t ci = part; ci < p.Cin_g; ci += split, x_c += x_step, w_c += w_step) {
      int64_t iw = iw0;
#pragma unroll 2
      for (int64_t kw = tw.k0; kw < p.KW; kw += tw.step, iw -= diw) {
        if (iw < 0 || iw >= p.Win) continue;
        acc_t xv[kWin];
#pragma unroll
        for (int u = 0; u < kWin; ++u) xv[u] = (in_rows >> u & 1u) ? static_cast<acc_t>(x_c[iw + u * p.Win]) : acc_t(0);
#pragma unroll
        for (int i = 0; i < NTH; ++i) {
          if (i < nth) {
#pragma unroll
            for (int c = 0; c < CO_T; ++c) {
              if (CO_T == 1 || c < p.Cout_g) {
                const acc_t wv = static_cast<acc_t>(__ldg(w_c + kw + w_tap[i] + c * KK));
#pragma unroll
                for (int r = 0; r < ROWS; ++r) acc[c][r] += wv * xv[r + i];
              }
            }
          }
        }
      }
    }
  }

  if (split > 1) {
    // Each warp's partial sums to shared memory, then each thread of a split set sums every split-th of
    // its set's (channel, row) outputs and keeps that one.
    extern __shared__ unsigned char rows_smem[];
    acc_t* red = reinterpret_cast<acc_t*>(rows_smem);
    constexpr int kOut = CO_T * ROWS;
#pragma unroll
    for (int c = 0; c < CO_T; ++c)
#pragma unroll
      for (int r = 0; r < ROWS; ++r) red[(warp * kOut + c * ROWS + r) * 32 + lane] = acc[c][r];
    __syncthreads();
    if (!active) return;
    const int set = warp - part;
#pragma unroll
    for (int j = 0; j < kOut; ++j) {
      if ((j & (split - 1)) == part) {
        acc_t sum = acc_t(0);
        for (int k = 0; k < split; ++k) sum += red[((set + k) * kOut + j) * 32 + lane];
        acc[j / ROWS][j % ROWS] = sum;
      }
    }
  }

#pragma unroll
  for (int c = 0; c < CO_T; ++c) {
    if (c < p.Cout_g) {
      const int64_t oc = g * p.Cout_g + c;
      const acc_t bv = bias != nullptr ? static_cast<acc_t>(bias[oc]) : acc_t(0);
      scalar_t* y_c = y + ((n * p.Cout + oc) * p.Hout + rh) * p.Wout + rw + mw * p.sw;
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        if (mh0 + r < Mh && ((c * ROWS + r) & (split - 1)) == part) y_c[(mh0 + r) * p.sh * p.Wout] = static_cast<scalar_t>(acc[c][r] + bv);
      }
    }
  }
}

// Height taps a phase can have: every phase's count is at most this.
int64_t max_row_taps(const ConvTParams& p) { return (p.KH + p.sh - 1) / p.sh; }

int64_t row_threads(const ConvTParams& p, int rows) {
  const int64_t strips = (phase_extent(0, p.sh, p.Hout) + rows - 1) / rows;
  return p.N * strips * phase_extent(0, p.sw, p.Wout);
}

template <typename scalar_t, int CO_T, int NTH, int ROWS>
void launch(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
            int split, cudaStream_t stream) {
  using acc_t = at::opmath_type<scalar_t>;
  const int warps = block_warps(split);
  const int64_t per_block = 32 * warps / split;  // output columns (threads' worth of outputs) a block
  const size_t smem = split > 1 ? size_t(warps) * CO_T * ROWS * 32 * sizeof(acc_t) : 0;
  const dim3 grid(static_cast<unsigned>((row_threads(p, ROWS) + per_block - 1) / per_block),
                  static_cast<unsigned>(std::min(p.sh, p.Hout) * std::min(p.sw, p.Wout)),
                  static_cast<unsigned>(p.groups));
  convt_rows_kernel<scalar_t, acc_t, CO_T, NTH, ROWS><<<grid, 32 * warps, smem, stream>>>(
      p, x.const_data_ptr<scalar_t>(), w.const_data_ptr<scalar_t>(),
      b.defined() ? b.const_data_ptr<scalar_t>() : nullptr, out.mutable_data_ptr<scalar_t>(), split);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename scalar_t, int CO_T, int ROWS>
void launch_taps(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 int split, cudaStream_t stream) {
  const int64_t t = max_row_taps(p);
  if (t <= 2) {
    launch<scalar_t, CO_T, 2, ROWS>(p, x, w, b, out, split, stream);
  } else if (t <= 3) {
    launch<scalar_t, CO_T, 3, ROWS>(p, x, w, b, out, split, stream);
  } else {
    launch<scalar_t, CO_T, kRowsMaxTaps, ROWS>(p, x, w, b, out, split, stream);
  }
}

template <typename scalar_t, int ROWS>
void launch_cout(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 int split, cudaStream_t stream) {
  if (p.Cout_g == 1) {
    launch_taps<scalar_t, 1, ROWS>(p, x, w, b, out, split, stream);
  } else if (p.Cout_g == 2) {
    launch_taps<scalar_t, 2, ROWS>(p, x, w, b, out, split, stream);
  } else {
    launch_taps<scalar_t, 4, ROWS>(p, x, w, b, out, split, stream);
  }
}

// Warps of the whole grid at this tile (the y and z dimensions: phases and groups).
int64_t grid_warps(const ConvTParams& p, int rows) {
  return (row_threads(p, rows) + 31) / 32 * p.groups * std::min(p.sh, p.Hout) * std::min(p.sw, p.Wout);
}

// The widest split the kernel takes: 8 warps, 4 in double (its shared sums would pass 48 KB).
int max_split(at::ScalarType dtype) { return dtype == at::kDouble ? 4 : 8; }

// The split for the 8-row tile: the one with the least waves x channels a warp, at 16 resident warps an SM
// (the 128-register cap) and at least 4 input channels a warp; ties to the smaller; at most 4, whose blocks
// are 4 warps: 8 warps a block fit fewer an SM and lost everywhere they were measured. Measured
// (docs/kernel-notes.md v12): fsrcnn-56-1-n1 (1.1 waves unsplit) best at 4, dcgan-64-3-n64 (0.5 waves) at 2,
// depthwise (one channel a group) unsplit.
int auto_split(const ConvTParams& p, at::ScalarType dtype, int sms) {
  const int64_t warps = grid_warps(p, 8), cap = int64_t(sms) * 16;
  int best = 1;
  double best_t = static_cast<double>((warps + cap - 1) / cap);
  for (int split = 2; split <= std::min(4, max_split(dtype)) && p.Cin_g >= 4 * split; split *= 2) {
    const double t = static_cast<double>((warps * split + cap - 1) / cap) / split;
    if (t < best_t) best = split, best_t = t;
  }
  return best;
}

}  // namespace

bool rows_supports(const ConvTParams& p) {
  // Grid limits: pixel blocks in x (32 threads' outputs a block at the widest split), phases in y, groups in z.
  return p.Cout_g >= 1 && p.Cout_g <= kRowsMaxCout && p.dh == 1 && max_row_taps(p) <= kRowsMaxTaps &&
         p.groups <= 65535 && std::min(p.sh, p.Hout) * std::min(p.sw, p.Wout) <= 65535 &&
         (row_threads(p, 4) + 31) / 32 < (int64_t(1) << 31) && p.Hin * p.Win < (int64_t(1) << 40);
}

RowsTile rows_preferred(const ConvTParams& p, at::ScalarType dtype, int device) {
  if (!rows_supports(p)) return {};
  const int sms = sm_count(device);
  // 8 rows a thread reuse a window best: unsplit where they give 16 warps an SM, split where splitting fills
  // the waves better and gives at least 8; else 4 rows a thread (their loop over the channels stays short)
  // with at most 16 channels a group, and past that the FFMA kernel.
  const int split = auto_split(p, dtype, sms);
  if (grid_warps(p, 8) * split >= int64_t(sms) * (split > 1 ? 8 : 16)) return {8, split};
  if (p.Cin_g > 16) return {};
  return {4, 1};
}

void launch_rows(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 RowsTile tile, cudaStream_t stream) {
  TORCH_CHECK(rows_supports(p), "convt: the rows kernel does not take this problem");
  const at::ScalarType dtype = x.scalar_type();
  if (tile.rows == 0) {
    const RowsTile pick = rows_preferred(p, dtype, x.get_device());
    tile.rows = pick.rows != 0 ? pick.rows : 4;
    if (tile.split == 0) tile.split = pick.rows != 0 ? pick.split : 1;
  }
  if (tile.split == 0) tile.split = tile.rows == 8 ? auto_split(p, dtype, sm_count(x.get_device())) : 1;
  tile.split = std::min(tile.split, max_split(dtype));
  TORCH_CHECK(tile.split == 1 || tile.split == 2 || tile.split == 4 || tile.split == 8,
              "convt: the rows kernel splits over 1, 2, 4 or 8 warps, not ", tile.split);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "convt_rows", [&] {
    if (tile.rows == 8) {
      launch_cout<scalar_t, 8>(p, x, w, b, out, tile.split, stream);
    } else {
      launch_cout<scalar_t, 4>(p, x, w, b, out, tile.split, stream);
    }
  });
}

}  // namespace convt
