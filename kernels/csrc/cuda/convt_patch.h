// The FFMA path for 1-4 output channels a group that shares staged input between
// phases (convt_patch.cu): a block computes every phase of a patch of outputs
// from one shared-memory copy of the input rows and columns the patch reads.
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include "../convt_params.h"

namespace convt {

// 1-4 output channels a group, height dilation 1, at most 16 phases, taps that
// reach at most 8 columns and 16 rows past a patch, and 32-bit sizes.
bool patch_supports(const ConvTParams& p);
// split: warps that share one warp's outputs, each summing every split-th input
// channel of a chunk (1, 2 or 4); 0: the kernel's pick.
// acc_bytes: the size of the op's accumulation type (float, or double).
int patch_auto_split(const ConvTParams& p, size_t acc_bytes, int device);
void launch_patch(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                  int split, cudaStream_t stream);

}  // namespace convt
