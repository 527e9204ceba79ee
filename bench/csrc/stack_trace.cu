// The stack kernel built with its phase marks (convt_stack.cu's CONVT_STACK_TRACE), for bench/stack_trace.py: runs
// one launch and returns every block's marks.
#define CONVT_STACK_TRACE 1
#include "../../kernels/csrc/cuda/convt_stack.cu"

#include <c10/cuda/CUDAStream.h>
#include <torch/extension.h>

namespace convt {
// The main extension's device check (convt_tc.cu), which this module does not link: the trace runs on sm_90 only.
bool wg_available(int device) {
  cudaDeviceProp prop;
  C10_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return prop.major == 9 && prop.minor == 0;
}
}  // namespace convt

// (out, marks): marks[block] = {globaltimer start, smid, clock start, clock after the prologue, clock after cell rows
// 0..9, clock at the end, globaltimer at the end}; zero where a block did not reach a mark.
std::vector<at::Tensor> traced(const at::Tensor& x, const at::Tensor& w, std::vector<int64_t> stride,
                               std::vector<int64_t> padding, std::vector<int64_t> output_padding, int64_t groups,
                               std::vector<int64_t> dilation) {
  const convt::ConvTParams p = convt::make_params(x, w, c10::nullopt, stride, padding, output_padding, groups, dilation);
  TORCH_CHECK(x.is_contiguous() && w.is_contiguous(), "stack_trace: contiguous tensors");
  TORCH_CHECK(convt::stack_rows(p, x, true) > 0, "stack_trace: the stack kernel does not take this shape");
  at::Tensor out = at::empty({p.N, p.Cout, p.Hout, p.Wout}, x.options());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  void* sym = nullptr;
  C10_CUDA_CHECK(cudaGetSymbolAddress(&sym, convt::stack_trace));
  C10_CUDA_CHECK(cudaMemsetAsync(sym, 0, sizeof(convt::stack_trace), stream));
  convt::launch_stack(p, x, w, at::Tensor(), out, stream);
  at::Tensor marks = at::empty({convt::kTraceBlocks, convt::kTraceSlots}, x.options().dtype(at::kLong));
  C10_CUDA_CHECK(cudaMemcpyAsync(marks.data_ptr(), sym, sizeof(convt::stack_trace), cudaMemcpyDeviceToDevice, stream));
  return {out, marks};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("traced", &traced); }
