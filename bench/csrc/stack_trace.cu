// The stack kernel built with its phase marks (convt_stack.cu's CONVT_STACK_TRACE), for bench/stack_trace.py. The
// source is convt_stack_alt.cu where STACK_ALT is defined (another revision's convt_stack.cu, copied into a folder on
// the include path ahead of the tree's, for side-by-side runs), else the tree's.
#define CONVT_STACK_TRACE 1
#ifdef STACK_ALT
#include "convt_stack_alt.cu"
#else
#include "../../kernels/csrc/cuda/convt_stack.cu"
#endif

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

namespace {

__global__ void empty_kernel() {}

// An empty kernel of the stack launch's grid size, block size and dynamic shared memory: the launch and drain that
// any kernel of that shape pays, measured beside the stack kernel's GPU time.
void empty(int64_t blocks, int64_t threads, int64_t smem) {
  C10_CUDA_CHECK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  empty_kernel<<<unsigned(blocks), unsigned(threads), size_t(smem), c10::cuda::getCurrentCUDAStream()>>>();
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void* marks_symbol() {
  void* sym = nullptr;
  C10_CUDA_CHECK(cudaGetSymbolAddress(&sym, convt::stack_trace));
  return sym;
}

// One launch of the stack kernel (no bias), marking the blocks' phases.
at::Tensor run(const at::Tensor& x, const at::Tensor& w, std::vector<int64_t> stride, std::vector<int64_t> padding,
               std::vector<int64_t> output_padding, int64_t groups, std::vector<int64_t> dilation) {
  const convt::ConvTParams p = convt::make_params(x, w, c10::nullopt, stride, padding, output_padding, groups, dilation);
  TORCH_CHECK(x.is_cuda() && x.is_contiguous() && w.is_contiguous(), "stack_trace: contiguous CUDA tensors");
  TORCH_CHECK(convt::stack_rows(p, x, true) > 0, "stack_trace: the stack kernel does not take this shape");
  at::Tensor out = at::empty({p.N, p.Cout, p.Hout, p.Wout}, x.options());
  convt::launch_stack(p, x, w, at::Tensor(), out, c10::cuda::getCurrentCUDAStream());
  return out;
}

void clear_marks() {
  C10_CUDA_CHECK(cudaMemsetAsync(marks_symbol(), 0, sizeof(convt::stack_trace), c10::cuda::getCurrentCUDAStream()));
}

// marks[block] = {globaltimer at the start, smid, clock at the start, clock after the prologue, clock after cell rows
// 0..9, clock at the end, globaltimer at the end}; zero where a block did not reach a mark since clear_marks.
at::Tensor marks() {
  at::Tensor m = at::empty({convt::kTraceBlocks, convt::kTraceSlots}, at::TensorOptions().device(at::kCUDA).dtype(at::kLong));
  C10_CUDA_CHECK(cudaMemcpyAsync(m.data_ptr(), marks_symbol(), sizeof(convt::stack_trace), cudaMemcpyDeviceToDevice,
                                 c10::cuda::getCurrentCUDAStream()));
  return m;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("run", &run);
  m.def("clear_marks", &clear_marks);
  m.def("marks", &marks);
  m.def("empty", &empty);
}
