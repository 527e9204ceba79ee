// The wgmma cells path (convt_wcells.cu): the cells kernel's GEMM (convt_cells.h: rows are cells of the output, the
// sh x sw outputs one input position starts; columns are a cell's outputs; the reduction runs over input channels x
// the input offsets the taps read) on Hopper's asynchronous wgmma, both operands read by descriptor from shared
// memory. The input is staged channel-last, 16 bytes of channels a pixel, so each offset of the reduction is the same
// descriptor moved by whole pixels, and a warpgroup's 64 x 16 x k-step product is one instruction where mma.sync
// spends eight and their fragment loads.
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include "../convt_params.h"

namespace convt {

// fp16, bf16 and fp32 with TF32 products (not strict fp32); a cell's outputs (Cout/g x sh x sw) at most 16; the input
// offsets the taps read (at the cells' shift) at most 8 a axis and 16 in all; every chunk's weights in 64 KB (512
// bytes a chunk of 8 fp32 or 16 half channels and offset: FSRCNN's 56 channels x 9 offsets 32 KB in TF32); 32-bit
// sizes within an image and a group's weights; a batch and groups of at most 65535; a device whose loaded cubin has sm_90a features.
// rows: cell rows a block, 8 (8 x 32 cells) or 16 (16 x 16); 0: the kernel's pick.
bool wcells_supports(const ConvTParams& p, const at::Tensor& x, bool tf32, int rows = 0);
void launch_wcells(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                   at::Tensor& out, int rows, cudaStream_t stream);

}  // namespace convt
