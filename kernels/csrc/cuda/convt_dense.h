// The dense path (convt_dense.cu): a stride-1 transposed convolution is one dense correlation (every tap
// reaches every output), so a block takes a rectangle of outputs x a tile of output channels and sums
// input channels x taps as one implicit GEMM on mma.sync. The input is read as it lies (NCHW): a chunk of
// input channels comes in as a halo of rows x columns around the block's outputs, and each tap's operand is
// that halo shifted by the tap, read from shared memory at any pixel offset. No channels-last copy, and
// the input crosses L2 once per block, not once per tap. Weights are packed once per call into the order of
// mma's A fragments (TF32-rounded, or split high and low for 3xTF32).
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include "../convt_params.h"

namespace convt {

// Output channels a warp (16 x mt: 32 or 64) and warps a block (8 or 16 output rows); 0: the kernel's pick.
struct DenseTile {
  int mt = 0;
  int warps = 0;
};

// The problem's sizes as the stride-1 kernels (dense, dwg) read them in device code, each geometry's base: ints, as
// their supports() bound them.
struct StrideOneDims {
  int n, hin, win, hout, wout;
  int kh, kw, ph, pw, dh, dw;
  int cin, cout, cin_g, cout_g;
  int64_t hw_in;
  static StrideOneDims of(const ConvTParams& p);
};

// fp32 (TF32 where tf32, else 3xTF32), fp16, bf16; stride 1; input rows in whole 16-byte copies (width a
// multiple of 16 bytes, a 16-byte-aligned input); a halo and a chunk's weights that fit shared memory.
bool dense_supports(const ConvTParams& p, const at::Tensor& x, bool tf32, DenseTile tile = {});
void launch_dense(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                  at::Tensor& out, bool tf32, DenseTile tile, cudaStream_t stream);

}  // namespace convt
