// The columns path (convt_cols.cu): the layer as one dense GEMM a group, input pixels (across the batch) x input
// channels times input channels x columns, a column being one (output channel, kernel row, kernel column) of the
// (Cin, Cout/g, KH, KW) weights, read as they lie. Then each column lands on the output:
// - shuffle: where the kernel is the stride and there is no padding (U-Net's 2x2 stride-2 upsampling), every input
//   pixel owns a disjoint KH x KW block of outputs, so each GEMM element is one output (a pixel shuffle);
// - gather: a block computes whole images (at most 256 pixels: DCGAN's 4x4 and 16x16 layers) or one tile of an image
//   (larger ones: FSRCNN's 256x256) against whole output channels, and each output sums its overlapping taps out of
//   the block's GEMM tile in shared memory (col2im without atomics). A tile recomputes the halo its neighbours share
//   (reach / stride input rows and columns) and writes only the outputs whose taps all lie in it.
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include "../convt_params.h"

namespace convt {

// fp16, bf16, fp32 (TF32 products where tf32, else 3xTF32); shuffle or gather geometry (above); operands 16-byte
// aligned; shuffle: 16-byte input planes and weight rows (pixels an image and Cout/g * KH * KW a multiple of 16
// bytes); gather: 16-byte input planes (whole images) or rows (tiles), one output channel's columns within the
// column tile, a tiling whose tile holds the halo; 32-bit sizes.
bool cols_supports(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w);
// Whether the columns path writes each GEMM element as one output (kernel == stride, no padding).
bool cols_shuffle(const ConvTParams& p);
// Whether the gather tiles the image (past what one block's pixel tile holds).
bool cols_tiled(const ConvTParams& p);
// Whether the gather copies the weights an element at a time (rows, or a block's columns, off 16 bytes).
bool cols_weights_by_element(const ConvTParams& p, const at::Tensor& x);
// depth: k a stage in 64-byte slices of each operand's rows (1 or 2; 0: the kernel's pick, 1; a gather that copies
// its weights by element stages 1). channels: gather's
// output channels a block (0: the kernel's pick; past what its column tile holds or breaking 16-byte column copies:
// what the tile holds).
void launch_cols(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 bool tf32, int depth, int channels, cudaStream_t stream);

}  // namespace convt
