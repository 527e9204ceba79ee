// The window kernel (convt_dwin.cu, sm_90a): stride 1, a 3-row kernel without height dilation and 32 or fewer output
// channels a group, on wgmma with the kernel's rows side by side in N. A consumer warpgroup walks a 64-column strip
// of output rows down the image one input row at a time: each input row's products go at once to the three output
// rows it feeds, whose accumulators roll through registers, so a halo row is transposed and read once, not once a
// kernel row. fp32 runs as TF32 only.
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include "../convt_params.h"

namespace convt {

// fp32 as TF32, fp16, bf16; stride 1; kernel height 3 at height dilation 1; at most 32 output channels a group;
// input rows in whole 16-byte copies and a 16-byte-aligned input; every group's weights resident in shared memory
// beside two or more stages of halo rows for each consumer warpgroup; a device whose loaded cubin has sm_90a
// features.
bool dwin_supports(const ConvTParams& p, const at::Tensor& x, bool tf32);
void launch_dwin(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 cudaStream_t stream);

}  // namespace convt
