// The FFMA path for 1-4 output channels a group (convt_rows.cu): a column of
// outputs a thread, the input rows its height taps share held in registers.
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include "../convt_params.h"

namespace convt {

constexpr int kRowsMaxCout = 4;  // output channels a group
constexpr int kRowsMaxTaps = 5;  // height taps a phase (kernel height over stride, rounded up)

// Height dilation 1 (the taps' rows are consecutive), few channels and taps, and the grid's limits.
bool rows_supports(const ConvTParams& p);
// The outputs a thread (8, or 4 where 8 would leave the GPU under 16 warps an SM) where the heuristic takes
// it, else 0: a thread loops over its group's input channels in turn, so with many of them and too few
// threads to hide that (dcgan-64-3-n64: 0.150 ms against the FFMA kernel's 0.140) the FFMA kernel stays.
int rows_preferred(const ConvTParams& p, int device);
// rows: outputs a thread, 4 or 8; 0 picks by the thread count.
void launch_rows(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 int rows, cudaStream_t stream);

}  // namespace convt
