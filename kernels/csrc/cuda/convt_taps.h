// The taps path (convt_taps.cu), for strided layers whose products a pixel, Cout/g x KH x KW, are few (FSRCNN's
// 56 -> 1 9x9 stride 3: 81; DCGAN's 64 -> 3 4x4: 48): per input pixel, every product it starts is one GEMM column
// against the weights ((output channel, tap) x input channels, on mma.sync), into a ring of input rows in shared
// memory; each output then sums the products of its taps from there (col2im), in a fixed order. A block walks a strip
// of 16 input columns down a segment of rows; the products of columns and rows that neighbouring strips and segments
// share are computed by both.
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include "../convt_params.h"

namespace convt {

// fp16, bf16 and fp32 with TF32 products (not strict fp32); a pixel's products at most 96; input channels a group at
// most 64; the input offsets an output's taps read (at the cells' shift) at most 4 a axis; at most 128 phases; a batch
// and groups of at most 65535; 32-bit sizes within an image.
bool taps_supports(const ConvTParams& p, const at::Tensor& x, bool tf32);
// A pixel's products as the kernel orders them (Cout/g x sh x height offsets x sw x width offsets, gaps included), or 0
// where it does not take the shape.
int taps_products(const ConvTParams& p, const at::Tensor& x, bool tf32);
void launch_taps(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 cudaStream_t stream);

}  // namespace convt
