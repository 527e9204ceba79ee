// CPU kernel: gather form, one (image, output channel) plane per task. Each output
// phase is a dense correlation over the taps that reach it, accumulated in a
// contiguous buffer (so the inner loop is unit-stride on both sides and
// vectorises) and then scattered to the phase's interleaved output positions.
#include <ATen/Parallel.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "../convt_params.h"

namespace convt {
namespace {

template <typename scalar_t, typename acc_t>
void plane(const ConvTParams& p, const scalar_t* in_n, const scalar_t* w, acc_t bias, int64_t co,
           scalar_t* out_plane, std::vector<acc_t>& acc) {
  const int64_t g = co / p.Cout_g, co_g = co % p.Cout_g;
  const int64_t HWin = p.Hin * p.Win, KK = p.KH * p.KW;
  for (int64_t rh = 0; rh < std::min(p.sh, p.Hout); ++rh) {
    const int64_t Mh = phase_extent(rh, p.sh, p.Hout);
    const PhaseTaps th = phase_taps(rh, p.ph, p.sh, p.dh, p.KH);
    for (int64_t rw = 0; rw < std::min(p.sw, p.Wout); ++rw) {
      const int64_t Mw = phase_extent(rw, p.sw, p.Wout);
      const PhaseTaps tw = phase_taps(rw, p.pw, p.sw, p.dw, p.KW);
      std::fill(acc.begin(), acc.begin() + Mh * Mw, bias);
      for (int64_t kh = th.k0; kh < p.KH; kh += th.step) {
        const int64_t bh = tap_offset(rh, p.ph, p.sh, p.dh, kh);
        const int64_t mh0 = std::max<int64_t>(0, -bh), mh1 = std::min(Mh, p.Hin - bh);
        for (int64_t kw = tw.k0; kw < p.KW; kw += tw.step) {
          const int64_t bw = tap_offset(rw, p.pw, p.sw, p.dw, kw);
          const int64_t mw0 = std::max<int64_t>(0, -bw), mw1 = std::min(Mw, p.Win - bw);
          if (mh0 >= mh1 || mw0 >= mw1) continue;
          for (int64_t ci = 0; ci < p.Cin_g; ++ci) {
            const int64_t c = g * p.Cin_g + ci;
            const acc_t wv = static_cast<acc_t>(w[(c * p.Cout_g + co_g) * KK + kh * p.KW + kw]);
            const scalar_t* src = in_n + c * HWin;
            for (int64_t mh = mh0; mh < mh1; ++mh) {
              const scalar_t* srow = src + (mh + bh) * p.Win + bw;
              acc_t* arow = acc.data() + mh * Mw;
              for (int64_t mw = mw0; mw < mw1; ++mw) arow[mw] += wv * static_cast<acc_t>(srow[mw]);
            }
          }
        }
      }
      for (int64_t mh = 0; mh < Mh; ++mh) {
        scalar_t* orow = out_plane + (rh + mh * p.sh) * p.Wout + rw;
        const acc_t* arow = acc.data() + mh * Mw;
        for (int64_t mw = 0; mw < Mw; ++mw) orow[mw * p.sw] = static_cast<scalar_t>(arow[mw]);
      }
    }
  }
}

void launch_cpu(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "convt_cpu", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const scalar_t* xp = x.const_data_ptr<scalar_t>();
    const scalar_t* wp = w.const_data_ptr<scalar_t>();
    const scalar_t* bp = b.defined() ? b.const_data_ptr<scalar_t>() : nullptr;
    scalar_t* op = out.mutable_data_ptr<scalar_t>();
    const int64_t plane_out = p.Hout * p.Wout;
    const int64_t phase_max = max_phase_pixels(p);
    const int64_t work_per_plane =
        std::max<int64_t>(1, p.Cin_g * p.KH * p.KW * p.Hin * p.Win / (p.sh * p.sw) + plane_out);
    const int64_t grain = std::max<int64_t>(1, 32768 / work_per_plane);
    at::parallel_for(0, p.N * p.Cout, grain, [&](int64_t begin, int64_t end) {
      std::vector<acc_t> acc(phase_max);
      for (int64_t idx = begin; idx < end; ++idx) {
        const int64_t n = idx / p.Cout, co = idx % p.Cout;
        plane<scalar_t, acc_t>(p, xp + n * p.Cin * p.Hin * p.Win, wp, bp ? static_cast<acc_t>(bp[co]) : acc_t(0), co,
                               op + idx * plane_out, acc);
      }
    });
  });
}

}  // namespace

CONVT_REGISTER_BACKEND(CPU, launch_cpu)

}  // namespace convt
