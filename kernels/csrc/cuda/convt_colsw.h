// The columns path's shuffle on wgmma (convt_colsw.cu, sm_90a): kernel == stride without padding (U-Net's 2x2
// upsampling) as one GEMM a group, pixels x input channels times input channels x (output channel, kernel row,
// kernel column), each GEMM element one output. The columns kernel's mma.sync form of it is bound by its instruction
// count (docs/kernel-notes.md, session 49); here a block keeps its 128 columns' weights in shared memory and walks
// pixel tiles, the input as wgmma's A from registers and the weights as B by descriptor.
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include "../convt_params.h"

namespace convt {

// A shuffle layer (cols_shuffle) in fp16, bf16 or fp32 as TF32 on an sm_90a device: at most 128 input channels a
// group in TF32 and 256 in half types (the block's weights, 72 KB), 16-byte input planes and weight rows, 16-byte
// aligned input and weight pointers, 32-bit sizes.
bool colsw_supports(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, bool tf32);
void launch_colsw(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                  cudaStream_t stream);

}  // namespace convt
