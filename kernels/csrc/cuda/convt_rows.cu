// The FFMA path for few output channels a group (1-4: FSRCNN's last layer, an
// RGB output): nothing there for a channel tile to reuse, so the general FFMA
// kernel paid a weight read from shared memory and an input read per FMA (ncu,
// fsrcnn-56-1-n1: 286 us, the shared-memory scoreboard 3.7 of 8.2 cycles a
// warp issue). Here a thread owns a column of kRows outputs of one phase at one
// output column, for every channel of its group. Within a phase the row taps
// read consecutive input rows (height dilation 1: tap i reads row m + a0 - i),
// so per input channel and width tap the thread loads one window of
// kRows + taps - 1 input values into registers and every height tap reads its
// rows from there; the lanes of a warp take adjacent columns, so each window
// row is one coalesced load. Weights are uniform across the block: cached
// broadcast loads.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAException.h>

#include "../convt_params.h"
#include "convt_rows.h"

namespace convt {
namespace {

constexpr int kThreads = 128;
constexpr int kRows = 8;

template <typename scalar_t, typename acc_t, int CO_T, int NTH>
__global__ void __launch_bounds__(kThreads)
    convt_rows_kernel(const ConvTParams p, const scalar_t* __restrict__ x,
                      const scalar_t* __restrict__ w, const scalar_t* __restrict__ bias,
                      scalar_t* __restrict__ y) {
  constexpr int kWin = kRows + NTH - 1;
  const int64_t phases_w = p.sw < p.Wout ? p.sw : p.Wout;
  const int64_t rh = blockIdx.y / phases_w, rw = blockIdx.y % phases_w;
  const int64_t g = blockIdx.z;
  const int64_t Mh = phase_extent(rh, p.sh, p.Hout), Mw = phase_extent(rw, p.sw, p.Wout);
  const int64_t strips = (Mh + kRows - 1) / kRows;
  const int64_t q = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (Mw == 0 || q >= p.N * strips * Mw) return;  // no barrier below: a thread past the phase just leaves
  const int64_t mw = q % Mw, n = q / Mw / strips, mh0 = (q / Mw) % strips * kRows;

  acc_t acc[CO_T][kRows];
#pragma unroll
  for (int c = 0; c < CO_T; ++c)
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[c][r] = acc_t(0);

  const PhaseTaps th = phase_taps(rh, p.ph, p.sh, p.dh, p.KH);
  const PhaseTaps tw = phase_taps(rw, p.pw, p.sw, p.dw, p.KW);
  if (th.k0 < p.KH && tw.k0 < p.KW) {  // else a pure fill: bias or zero
    const int nth = static_cast<int>((p.KH - 1 - th.k0) / th.step + 1);
    const int64_t a0 = tap_offset(rh, p.ph, p.sh, p.dh, th.k0);
    const int64_t low = mh0 + a0 - (nth - 1);  // the window's first input row
    const int64_t KK = p.KH * p.KW;
    for (int64_t ci = 0; ci < p.Cin_g; ++ci) {
      const scalar_t* x_c = x + ((n * p.Cin + g * p.Cin_g + ci) * p.Hin) * p.Win;
      const scalar_t* w_c = w + (g * p.Cin_g + ci) * p.Cout_g * KK;
      for (int64_t kw = tw.k0; kw < p.KW; kw += tw.step) {
        const int64_t iw = mw + tap_offset(rw, p.pw, p.sw, p.dw, kw);
        if (iw < 0 || iw >= p.Win) continue;
        acc_t xv[kWin];
#pragma unroll
        for (int u = 0; u < kWin; ++u) {
          const int64_t ih = low + u;
          xv[u] = (u < kRows + nth - 1 && ih >= 0 && ih < p.Hin) ? static_cast<acc_t>(x_c[ih * p.Win + iw])
                                                                  : acc_t(0);
        }
#pragma unroll
        for (int i = 0; i < NTH; ++i) {  // i counts taps from the last: its rows start at window row i
          if (i < nth) {
            const int64_t kh = th.k0 + (nth - 1 - i) * th.step;
            const scalar_t* w_t = w_c + kh * p.KW + kw;
#pragma unroll
            for (int c = 0; c < CO_T; ++c) {
              const acc_t wv = c < p.Cout_g ? static_cast<acc_t>(__ldg(w_t + c * KK)) : acc_t(0);
#pragma unroll
              for (int r = 0; r < kRows; ++r) acc[c][r] += wv * xv[r + i];
            }
          }
        }
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
      for (int r = 0; r < kRows; ++r) {
        if (mh0 + r < Mh) y_c[(mh0 + r) * p.sh * p.Wout] = static_cast<scalar_t>(acc[c][r] + bv);
      }
    }
  }
}

// Height taps a phase can have: every phase's count is at most this.
int64_t max_row_taps(const ConvTParams& p) { return (p.KH + p.sh - 1) / p.sh; }

template <typename scalar_t, int CO_T, int NTH>
void launch(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
            cudaStream_t stream) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t strips = (phase_extent(0, p.sh, p.Hout) + kRows - 1) / kRows;
  const int64_t pixels = p.N * strips * phase_extent(0, p.sw, p.Wout);
  const dim3 grid(static_cast<unsigned>((pixels + kThreads - 1) / kThreads),
                  static_cast<unsigned>(std::min(p.sh, p.Hout) * std::min(p.sw, p.Wout)),
                  static_cast<unsigned>(p.groups));
  convt_rows_kernel<scalar_t, acc_t, CO_T, NTH><<<grid, kThreads, 0, stream>>>(
      p, x.const_data_ptr<scalar_t>(), w.const_data_ptr<scalar_t>(),
      b.defined() ? b.const_data_ptr<scalar_t>() : nullptr, out.mutable_data_ptr<scalar_t>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename scalar_t, int CO_T>
void launch_taps(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 cudaStream_t stream) {
  const int64_t t = max_row_taps(p);
  if (t <= 2) {
    launch<scalar_t, CO_T, 2>(p, x, w, b, out, stream);
  } else if (t <= 3) {
    launch<scalar_t, CO_T, 3>(p, x, w, b, out, stream);
  } else {
    launch<scalar_t, CO_T, kRowsMaxTaps>(p, x, w, b, out, stream);
  }
}

}  // namespace

bool rows_supports(const ConvTParams& p) {
  // Grid limits: pixel blocks in x, phases in y, groups in z.
  const int64_t strips = (phase_extent(0, p.sh, p.Hout) + kRows - 1) / kRows;
  const int64_t blocks = (p.N * strips * phase_extent(0, p.sw, p.Wout) + kThreads - 1) / kThreads;
  return p.Cout_g >= 1 && p.Cout_g <= kRowsMaxCout && p.dh == 1 && max_row_taps(p) <= kRowsMaxTaps &&
         p.groups <= 65535 && std::min(p.sh, p.Hout) * std::min(p.sw, p.Wout) <= 65535 &&
         blocks < (int64_t(1) << 31);
}

void launch_rows(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 cudaStream_t stream) {
  TORCH_CHECK(rows_supports(p), "convt: the rows kernel does not take this problem");
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "convt_rows", [&] {
    if (p.Cout_g == 1) {
      launch_taps<scalar_t, 1>(p, x, w, b, out, stream);
    } else if (p.Cout_g == 2) {
      launch_taps<scalar_t, 2>(p, x, w, b, out, stream);
    } else {
      launch_taps<scalar_t, 4>(p, x, w, b, out, stream);
    }
  });
}

}  // namespace convt
