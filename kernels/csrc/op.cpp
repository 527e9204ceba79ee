// The op's schema, declared once; each backend registers its kernel for its own
// dispatch key (cpu/, cuda/). It mirrors aten::conv_transpose2d.input so that int
// or pair arguments parse exactly as torch.nn.functional.conv_transpose2d's do.
#include <torch/library.h>

TORCH_LIBRARY(convt, m) {
  m.def(
      "conv_transpose2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
      "int[2] padding=0, int[2] output_padding=0, int groups=1, int[2] dilation=1) -> Tensor");
  // Writes into a caller's buffer: lets tests poison the output first and so
  // prove that every element is written.
  m.def(
      "conv_transpose2d.out(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
      "int[2] padding=0, int[2] output_padding=0, int groups=1, int[2] dilation=1, *, Tensor(a!) out) -> Tensor(a!)");
}

// Autograd in C++: the Python registration (torch.library.register_autograd) ran a Python function on
// every call made with grad mode on, whether or not anything required grad: ~15 us of host time a
// call, which a batch-1 decoder layer (dcgan-128-64-n1: ~30 us of work) pays in full.
#include <torch/autograd.h>

#include "op_handle.h"

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

at::Tensor redispatch(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                      c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef output_padding,
                      int64_t groups, c10::IntArrayRef dilation) {
  return convt::conv_transpose2d_handle().call(input, weight, bias, stride, padding, output_padding, groups, dilation);
}

class ConvTranspose2dFn : public torch::autograd::Function<ConvTranspose2dFn> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const std::optional<at::Tensor>& bias, c10::IntArrayRef stride, c10::IntArrayRef padding,
                            c10::IntArrayRef output_padding, int64_t groups, c10::IntArrayRef dilation) {
    at::AutoDispatchBelowADInplaceOrView below;
    at::Tensor out = redispatch(input, weight, bias, stride, padding, output_padding, groups, dilation);
    ctx->save_for_backward({input, weight});
    ctx->saved_data["stride"] = stride.vec();
    ctx->saved_data["padding"] = padding.vec();
    ctx->saved_data["output_padding"] = output_padding.vec();
    ctx->saved_data["dilation"] = dilation.vec();
    ctx->saved_data["groups"] = groups;
    ctx->saved_data["has_bias"] = bias.has_value() && bias->defined();
    return out;
  }

  // aten's own backward of a transposed convolution, for every argument the forward took.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    at::Tensor input = saved[0], grad_out = grads[0];
    const at::Tensor& weight = saved[1];
    const bool unbatched = input.dim() == 3, has_bias = ctx->saved_data["has_bias"].toBool();
    if (unbatched) {
      input = input.unsqueeze(0);
      grad_out = grad_out.unsqueeze(0);
    }
    const int64_t groups = ctx->saved_data["groups"].toInt();
    const std::vector<int64_t> stride = ctx->saved_data["stride"].toIntVector(),
                               padding = ctx->saved_data["padding"].toIntVector(),
                               output_padding = ctx->saved_data["output_padding"].toIntVector(),
                               dilation = ctx->saved_data["dilation"].toIntVector();
    const std::vector<int64_t> bias_sizes{weight.size(1) * groups};
    const std::array<bool, 3> mask{ctx->needs_input_grad(0), ctx->needs_input_grad(1),
                                   has_bias && ctx->needs_input_grad(2)};
    auto [gi, gw, gb] = at::convolution_backward(
        grad_out, input, weight, has_bias ? at::OptionalIntArrayRef(bias_sizes) : c10::nullopt, stride, padding,
        dilation, /*transposed=*/true, output_padding, groups, mask);
    if (unbatched && gi.defined()) gi = gi.squeeze(0);
    return {gi, gw, gb, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor conv_transpose2d_autograd(const at::Tensor& input, const at::Tensor& weight,
                                     const std::optional<at::Tensor>& bias, c10::IntArrayRef stride,
                                     c10::IntArrayRef padding, c10::IntArrayRef output_padding, int64_t groups,
                                     c10::IntArrayRef dilation) {
  // Nothing to differentiate (inference, or grad mode on with no operand requiring grad): straight to the backend.
  // Function::apply would still build a graph node, its saved-data map and the outputs' metadata, several
  // microseconds a call that a batch-1 layer's few microseconds of GPU time would carry in full.
  // A forward-mode (dual) operand still goes through apply, which refuses it (no jvp) rather than drop its tangent.
  const bool has_bias = bias.has_value() && bias->defined();
  const bool bias_grad = has_bias && bias->requires_grad();
  const bool dual = input._fw_grad(0).defined() || weight._fw_grad(0).defined() || (has_bias && bias->_fw_grad(0).defined());
  if (!dual && (!at::GradMode::is_enabled() || !(input.requires_grad() || weight.requires_grad() || bias_grad))) {
    at::AutoDispatchBelowADInplaceOrView below;
    return redispatch(input, weight, bias, stride, padding, output_padding, groups, dilation);
  }
  return ConvTranspose2dFn::apply(input, weight, bias, stride, padding, output_padding, groups, dilation);
}

}  // namespace

TORCH_LIBRARY_IMPL(convt, Autograd, m) { m.impl("conv_transpose2d", &conv_transpose2d_autograd); }
