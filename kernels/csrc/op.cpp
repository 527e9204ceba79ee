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
