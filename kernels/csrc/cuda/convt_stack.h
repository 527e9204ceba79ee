// The stack path (convt_stack.cu, sm_90a), for strided layers with few output channels a group, FSRCNN's 56 -> 1 9x9
// stride 3 first: one wgmma GEMM a cell row, whose reduction stacks the input channels of the uh input rows the cell
// row reads (K = uh x Cin/g), whose columns are a pixel's products (output channel, height phase, width phase, width
// offset; N = 32) and whose rows are 64 input columns (M, from registers); each output then sums its uw width taps'
// products from shared memory. The height taps' sum is the tensor cores', which the taps kernel (convt_taps.cu) leaves
// to its col2im.
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include "../convt_params.h"

namespace convt {

// fp16, bf16 and fp32 with TF32 products (not strict fp32) on an sm_90a device; at the cells' shift 2 or 3 input
// offsets along the height and at most 4 along the width; a pixel's products (Cout/g x sh x sw x width offsets) at
// most 32; input channels a group at most 64; a batch and groups of at most 65535; 32-bit sizes within an image.
bool stack_supports(const ConvTParams& p, const at::Tensor& x, bool tf32);
// The input rows a cell row stacks in the reduction (its height offsets, 2 or 3), or 0 where the kernel does not take
// the shape.
int stack_rows(const ConvTParams& p, const at::Tensor& x, bool tf32);
// Whether the launch loads rows past the first uh by TMA into a shared-memory ring (TF32 on aligned rows, convt_stack.cu
// ring_fits), so the tests can prove a forced case ran on it.
bool stack_ring(const ConvTParams& p, const at::Tensor& x, bool tf32);
void launch_stack(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                  cudaStream_t stream);

}  // namespace convt
