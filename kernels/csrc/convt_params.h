// The problem description of one conv_transpose2d call, computed and validated
// once on the host and shared by every backend. Header-only so the CPU and CUDA
// extensions (separate shared objects) each get their own copy.
#pragma once

#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace convt {

// Error messages are assembled into one std::string and never streamed: with
// torch 2.11 and an extension built by g++ 13, c10::str's std::ostream crashed
// (SIGSEGV in num_put) formatting an int64. A single std::string argument makes
// TORCH_CHECK skip the ostream altogether.
inline void append(std::string& s, const char* v) { s += v; }
inline void append(std::string& s, const std::string& v) { s += v; }
template <typename T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
inline void append(std::string& s, T v) { s += std::to_string(v); }
inline void append(std::string& s, at::IntArrayRef v) {
  s += "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  s += "]";
}
inline void append(std::string& s, c10::ScalarType t) { s += c10::toString(t); }
inline void append(std::string& s, const c10::Device& d) { s += d.str(); }

template <typename... Args>
std::string msg(const Args&... args) {
  std::string s;
  (append(s, args), ...);
  return s;
}

#define CONVT_CHECK(cond, ...) TORCH_CHECK(cond, ::convt::msg(__VA_ARGS__))

struct ConvTParams {
  int64_t N, Cin, Hin, Win;
  int64_t Cout, groups, Cin_g, Cout_g;
  int64_t KH, KW;
  int64_t sh, sw, ph, pw, oph, opw, dh, dw;
  int64_t Hout, Wout;
};

inline int64_t pair_at(at::IntArrayRef v, const char* name, size_t i) {
  CONVT_CHECK(v.size() == 1 || v.size() == 2, "conv_transpose2d: ", name,
              " must have 1 or 2 elements, got ", v.size());
  return v.size() == 1 ? v[0] : v[i];
}

// Mirrors the checks (and their RuntimeError kind) that ATen's convolution entry
// point applies to a transposed 2-d convolution. `input` must already be 4-d.
inline ConvTParams make_params(const at::Tensor& input, const at::Tensor& weight,
                               const c10::optional<at::Tensor>& bias,
                               at::IntArrayRef stride, at::IntArrayRef padding,
                               at::IntArrayRef output_padding, int64_t groups,
                               at::IntArrayRef dilation) {
  CONVT_CHECK(input.dim() == 4, "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of size: ",
              input.sizes());
  CONVT_CHECK(weight.dim() == 4, "conv_transpose2d: expected a 4D weight [Cin, Cout/groups, kH, kW], but got weight of size: ",
              weight.sizes());
  CONVT_CHECK(input.device() == weight.device(), "conv_transpose2d: input is on ", input.device(),
              " but weight is on ", weight.device(), "; expected both on the same device");
  CONVT_CHECK(input.scalar_type() == weight.scalar_type(), "conv_transpose2d: input type (",
              input.scalar_type(), ") and weight type (", weight.scalar_type(), ") should be the same");

  ConvTParams p;
  p.sh = pair_at(stride, "stride", 0);
  p.sw = pair_at(stride, "stride", 1);
  p.ph = pair_at(padding, "padding", 0);
  p.pw = pair_at(padding, "padding", 1);
  p.oph = pair_at(output_padding, "output_padding", 0);
  p.opw = pair_at(output_padding, "output_padding", 1);
  p.dh = pair_at(dilation, "dilation", 0);
  p.dw = pair_at(dilation, "dilation", 1);
  CONVT_CHECK(p.sh > 0 && p.sw > 0, "non-positive stride is not supported");
  CONVT_CHECK(p.ph >= 0 && p.pw >= 0, "negative padding is not supported");
  CONVT_CHECK(p.oph >= 0 && p.opw >= 0, "negative output_padding is not supported");
  CONVT_CHECK(p.dh > 0 && p.dw > 0, "dilation should be greater than zero");
  CONVT_CHECK(groups > 0, "non-positive groups is not supported");
  CONVT_CHECK(p.oph < p.sh || p.oph < p.dh, "output padding must be smaller than either stride or dilation, but got output_padding_height: ",
              p.oph, " stride_height: ", p.sh, " dilation_height: ", p.dh);
  CONVT_CHECK(p.opw < p.sw || p.opw < p.dw, "output padding must be smaller than either stride or dilation, but got output_padding_width: ",
              p.opw, " stride_width: ", p.sw, " dilation_width: ", p.dw);

  p.N = input.size(0);
  p.Cin = input.size(1);
  p.Hin = input.size(2);
  p.Win = input.size(3);
  p.groups = groups;
  p.KH = weight.size(2);
  p.KW = weight.size(3);
  CONVT_CHECK(weight.size(0) >= 1, "Given groups=", groups, ", expected weight to be at least 1 at dimension 0, but got weight of size ",
              weight.sizes(), " instead");
  CONVT_CHECK(weight.size(0) % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ", groups,
              " at dimension 0, but got weight of size ", weight.sizes(), " instead");
  CONVT_CHECK(p.Cin == weight.size(0), "Given transposed=1, weight of size ", weight.sizes(),
              ", expected input", input.sizes(), " to have ", weight.size(0), " channels, but got ",
              p.Cin, " channels instead");
  p.Cin_g = p.Cin / groups;
  p.Cout_g = weight.size(1);
  p.Cout = p.Cout_g * groups;
  CONVT_CHECK(p.KH > 0 && p.KW > 0, "conv_transpose2d: kernel size must be positive, got weight of size ", weight.sizes());
  CONVT_CHECK(p.Hin > 0 && p.Win > 0, "Only zero batch or zero channel inputs are supported, but got input shape: ", input.sizes());
  if (bias.has_value() && bias->defined()) {
    CONVT_CHECK(bias->dim() == 1 && bias->size(0) == p.Cout, "Given transposed=1, weight of size ", weight.sizes(),
                ", expected bias to be 1-dimensional with ", p.Cout, " elements, but got bias of size ",
                bias->sizes(), " instead");
    CONVT_CHECK(bias->device() == input.device(), "conv_transpose2d: input is on ", input.device(),
                " but bias is on ", bias->device(), "; expected both on the same device");
    CONVT_CHECK(bias->scalar_type() == input.scalar_type(), "conv_transpose2d: input type (",
                input.scalar_type(), ") and bias type (", bias->scalar_type(), ") should be the same");
  }
  p.Hout = (p.Hin - 1) * p.sh - 2 * p.ph + p.dh * (p.KH - 1) + p.oph + 1;
  p.Wout = (p.Win - 1) * p.sw - 2 * p.pw + p.dw * (p.KW - 1) + p.opw + 1;
  CONVT_CHECK(p.Hout > 0 && p.Wout > 0, "Given input size per channel: (", p.Hin, " x ", p.Win,
              "). Calculated output size per channel: (", p.Hout, " x ", p.Wout, "). Output size is too small");
  return p;
}

#if defined(__CUDACC__)
#define CONVT_HD __host__ __device__
#else
#define CONVT_HD
#endif

CONVT_HD inline int64_t floor_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return r < 0 ? r + b : r;
}

// Per axis, output index o = phase + stride * m receives the taps
// k = k0, k0 + step, ... (step = stride / gcd(stride, dilation)), each reading input
// row i = m + (phase + pad - k * dil) / stride, an exact division. So the
// divisibility test is paid once per phase, never per output and tap, and no loop
// visits a tap that cannot contribute.
struct PhaseTaps {
  int64_t k0;    // first contributing tap; >= K when the phase has none (pure fill)
  int64_t step;  // distance between contributing taps
};

CONVT_HD inline PhaseTaps phase_taps(int64_t phase, int64_t pad, int64_t stride, int64_t dil, int64_t K) {
  int64_t a = stride, b = dil;
  while (b != 0) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  PhaseTaps t{K, stride / a};
  for (int64_t k = 0; k < t.step && k < K; ++k) {
    if (floor_mod(phase + pad - k * dil, stride) == 0) {
      t.k0 = k;
      break;
    }
  }
  return t;
}

// Taps a phase has along one axis: k0, k0 + step, ... below K; none for a pure-fill phase.
CONVT_HD inline int64_t phase_tap_count(const PhaseTaps& t, int64_t K) { return t.k0 < K ? (K - 1 - t.k0) / t.step + 1 : 0; }

// Input row read by tap k for outputs of this phase: i = m + tap_offset.
CONVT_HD inline int64_t tap_offset(int64_t phase, int64_t pad, int64_t stride, int64_t dil, int64_t k) {
  return (phase + pad - k * dil) / stride;
}

// Number of outputs o in [0, out) with o = phase (mod stride).
CONVT_HD inline int64_t phase_extent(int64_t phase, int64_t stride, int64_t out) {
  return phase < out ? (out - phase + stride - 1) / stride : 0;
}

// Outputs in the largest phase of one image: phase 0 along each axis is never
// smaller than the others. Sizes per-phase buffers and tiles.
inline int64_t max_phase_pixels(const ConvTParams& p) {
  return phase_extent(0, p.sh, p.Hout) * phase_extent(0, p.sw, p.Wout);
}

// The part of the op every backend shares: 3-d (unbatched) input, validation,
// contiguous operands and the output (allocated, or the caller's `out`, checked).
// `launch` must write every element of the 4-d output it is given.
template <typename Launch>
at::Tensor run_conv_transpose2d(const at::Tensor& input_in, const at::Tensor& weight,
                                const c10::optional<at::Tensor>& bias_in, at::IntArrayRef stride,
                                at::IntArrayRef padding, at::IntArrayRef output_padding, int64_t groups,
                                at::IntArrayRef dilation, const at::Tensor* out_in, Launch&& launch) {
  const bool unbatched = input_in.dim() == 3;
  const at::Tensor input4 = unbatched ? input_in.unsqueeze(0) : input_in;
  const ConvTParams p = make_params(input4, weight, bias_in, stride, padding, output_padding, groups, dilation);
  const auto st = input4.scalar_type();
  CONVT_CHECK(st == at::kFloat || st == at::kDouble || st == at::kHalf || st == at::kBFloat16,
              "conv_transpose2d: unsupported dtype ", st, "; supported dtypes are float32, float64, float16 and bfloat16");
  at::Tensor out;
  if (out_in != nullptr) {
    const std::vector<int64_t> want = unbatched ? std::vector<int64_t>{p.Cout, p.Hout, p.Wout}
                                                : std::vector<int64_t>{p.N, p.Cout, p.Hout, p.Wout};
    CONVT_CHECK(out_in->sizes() == at::IntArrayRef(want), "conv_transpose2d: out has size ", out_in->sizes(),
                ", expected ", at::IntArrayRef(want));
    CONVT_CHECK(out_in->scalar_type() == st && out_in->device() == input4.device(),
                "conv_transpose2d: out must have the input's dtype (", st, ") and device (", input4.device(), ")");
    CONVT_CHECK(out_in->is_contiguous(), "conv_transpose2d: out must be contiguous");
    out = unbatched ? out_in->unsqueeze(0) : *out_in;
  } else {
    out = at::empty({p.N, p.Cout, p.Hout, p.Wout}, input4.options().memory_format(at::MemoryFormat::Contiguous));
  }
  if (out.numel() > 0) {
    const bool has_bias = bias_in.has_value() && bias_in->defined();
    launch(p, input4.contiguous(), weight.contiguous(), has_bias ? bias_in->contiguous() : at::Tensor(), out);
  }
  if (out_in != nullptr) return *out_in;
  return unbatched ? out.squeeze(0) : out;
}

// Both overloads of a backend from one launcher: the functional op and `.out`.
#define CONVT_REGISTER_BACKEND(KEY, LAUNCH)                                                                      \
  at::Tensor convt_functional_##KEY(const at::Tensor& input, const at::Tensor& weight,                          \
                                    const c10::optional<at::Tensor>& bias, at::IntArrayRef stride,              \
                                    at::IntArrayRef padding, at::IntArrayRef output_padding, int64_t groups,    \
                                    at::IntArrayRef dilation) {                                                 \
    return run_conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation,         \
                                nullptr, LAUNCH);                                                               \
  }                                                                                                             \
  at::Tensor& convt_out_##KEY(const at::Tensor& input, const at::Tensor& weight,                                \
                              const c10::optional<at::Tensor>& bias, at::IntArrayRef stride,                    \
                              at::IntArrayRef padding, at::IntArrayRef output_padding, int64_t groups,          \
                              at::IntArrayRef dilation, at::Tensor& out) {                                      \
    run_conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation, &out, LAUNCH);  \
    return out;                                                                                                 \
  }                                                                                                             \
  TORCH_LIBRARY_IMPL(convt, KEY, m) {                                                                           \
    m.impl("conv_transpose2d", &convt_functional_##KEY);                                                        \
    m.impl("conv_transpose2d.out", &convt_out_##KEY);                                                           \
  }

}  // namespace convt
