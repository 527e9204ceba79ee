// The cells path (convt_cells.cu), for strided layers with few output channels a group (FSRCNN's 56 -> 1, 9x9
// stride 3; DCGAN's 64 -> 3): one implicit GEMM whose rows are cells of the output, sh x sw blocks of it, one per
// input-grid position, and whose columns are a cell's outputs (its sh x sw phases x the group's output channels).
// Its reduction runs over input channels x the input offsets any phase's taps read, against weights laid out per
// (offset, phase) with zeros where a phase has no tap at that offset. So every output is written once by the thread
// that sums it (no col2im, no halo recomputed), and the reduction is on tensor cores even at one output channel.
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include "../convt_params.h"

namespace convt {

// fp16, bf16, fp32 (TF32 products where tf32, else 3xTF32); a cell's outputs (Cout/g x sh x sw) at most 16; the
// input offsets the taps read at most 8 a axis; 32-bit sizes within an image and a group's weights.
bool cells_supports(const ConvTParams& p, const at::Tensor& x);
// ksteps: mma k-steps a chunk of input channels (1: 8 fp32 or 16 half channels, 2: twice that; 0: the kernel's pick).
void launch_cells(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                  bool tf32, int ksteps, cudaStream_t stream);

}  // namespace convt
