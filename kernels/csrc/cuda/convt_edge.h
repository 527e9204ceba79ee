// The edge kernel (convt_edge.cu): a few output columns at the right edge of a stride-1 layer with a 3-row kernel,
// by FFMA. The window kernel's wgmma tiles are 64 columns wide, so its last strip of a layer like kb71's (1026
// columns) computes 64 columns for 2 (convt_dwin.cu's split_narrow hands those columns here).
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include "../convt_params.h"

namespace convt {

// Stride 1, kernel height 3 at height dilation 1, at most 32 output channels a group (the window kernel's layers);
// fp32 (computed in full fp32), fp16, bf16; contiguous input, weights and output; one input channel's weights and
// staged rows within 96 KB of shared memory.
bool edge_supports(const ConvTParams& p, int elem);
// Writes output columns [col0, Wout) of every row, channel and image; leaves the others alone.
void launch_edge(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 int col0, cudaStream_t stream);

}  // namespace convt
