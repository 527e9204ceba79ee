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

// Warpgroups a block: consumers (each walking its own strips) and the producers that feed them. {2, 1} (dwin2: two
// producer warps a consumer), {3, 1} (dwin3: one), {2, 2} (dwinw: four); {0, 0}: the kernel's pick.
struct DwinShape {
  int consumers = 0;
  int producers = 0;
};

// fp32 as TF32, fp16, bf16; stride 1; kernel height 3 at height dilation 1; at most 32 output channels a group;
// input rows in whole 16-byte copies and a 16-byte-aligned input; every group's weights resident in shared memory
// beside two or more stages of halo rows for each consumer warpgroup; a device whose loaded cubin has sm_90a
// features. Returns the shape that runs (`want`, or the pick where want is {0, 0}), or {0, 0} where the problem or
// device is not the kernel's.
DwinShape dwin_shape(const ConvTParams& p, const at::Tensor& x, bool tf32, DwinShape want = {});
void launch_dwin(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 DwinShape shape, cudaStream_t stream);

}  // namespace convt
