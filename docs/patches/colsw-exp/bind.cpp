// The experiment module's entry: make_params as the op's, then one named variant of v49.cuh (variants.cu).
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

#include "convt_params.h"

namespace convt { void run_variant(int id, const ConvTParams& p, const at::Tensor& x, const at::Tensor& w,
                                   const at::Tensor& b, at::Tensor& out, cudaStream_t stream); }

void run(int64_t id, const at::Tensor& x, const at::Tensor& w, const c10::optional<at::Tensor>& b,
         std::vector<int64_t> stride, int64_t groups, at::Tensor out) {
  const std::vector<int64_t> zero{0, 0}, one{1, 1};
  const convt::ConvTParams p = convt::make_params(x, w, b, stride, zero, zero, groups, one);
  TORCH_CHECK(x.is_contiguous() && w.is_contiguous() && out.is_contiguous(), "contiguous only");
  TORCH_CHECK(out.size(2) == p.Hout && out.size(3) == p.Wout && out.size(1) == p.Cout, "out shape");
  at::Tensor bias = b.has_value() ? *b : at::Tensor();
  convt::run_variant(static_cast<int>(id), p, x, w, bias, out, c10::cuda::getCurrentCUDAStream());
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run); }
