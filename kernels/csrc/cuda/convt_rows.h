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
// rows: outputs a thread (4 or 8); split: warps that share them, each summing every split-th input channel
// (1, 2, 4 or 8; at most 4 in double). 0: the kernel's pick.
struct RowsTile {
  int rows = 0;
  int split = 0;
};

// The tile where the heuristic takes the rows kernel, else rows == 0: the 8-row tile, its input channels
// split where that fills the GPU's waves better (at least 4 channels a warp); 4 rows unsplit where 8 leave
// the GPU under 16 warps an SM and a group has at most 16 input channels.
RowsTile rows_preferred(const ConvTParams& p, at::ScalarType dtype, int device);
void launch_rows(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 RowsTile tile, cudaStream_t stream);

}  // namespace convt
