// The kernel-equals-stride path (convt_shuffle.cu). Where the kernel is the stride and there is no padding,
// each input pixel owns a disjoint KH x KW block of outputs (U-Net's 2x2 stride-2 upsampling): the layer is one
// dense GEMM an image and group, pixels x input channels times input channels x (output channel, kernel row,
// kernel column), whose columns land as a pixel shuffle. No phases, no taps, no overlap.
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include "../convt_params.h"

namespace convt {

// Kernel == stride, no padding, output padding or dilation; fp16 or bf16, or fp32 as TF32 (tf32: the op's TF32
// switch); 16-byte input planes and weight rows (pixels and kernel-block columns a multiple of 16 bytes, operands
// 16-byte aligned) and 32-bit sizes.
bool shuffle_supports(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, bool tf32);
// depth: k a stage in 64-byte slices of each operand's rows (1 or 2; 0: the kernel's pick, 1).
void launch_shuffle(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                    at::Tensor& out, int depth, cudaStream_t stream);

}  // namespace convt
