// The dense path on wgmma (convt_dwg.cu, sm_90a): the dense kernel's stride-1 implicit GEMM (convt_dense.h) with
// the operands swapped onto Hopper's asynchronous tensor-core instruction. Output pixels are wgmma's M, taken
// from registers loaded out of the NCHW input halo at any shift (no shared-memory descriptor can start at one
// pixel); output channels are its N, the weights read by descriptor from shared memory, packed once a call.
// fp32 runs as TF32 only (strict fp32 stays on the dense kernel's 3xTF32).
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include "../convt_params.h"

namespace convt {

// Output rows a warpgroup (1, 2 or 4; a warpgroup's taps share the A fragments of the halo rows its rows have in
// common) and warpgroups a block (2 or 3); 0s: the kernel's pick.
struct DwgTile {
  int rows = 0;
  int groups = 0;
};

// fp32 as TF32, fp16, bf16; stride 1; input rows in whole 16-byte copies and a 16-byte-aligned input; a halo and
// a chunk's weights in at least three stages of shared memory; kernels up to 8 columns wide (4 on 4-row tiles); a device whose loaded cubin has sm_90a features.
bool dwg_supports(const ConvTParams& p, const at::Tensor& x, bool tf32, DwgTile tile = {});
void launch_dwg(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                DwgTile tile, cudaStream_t stream);

}  // namespace convt
