// The path for strided problems whose time is the output's bytes (convt_strip.cu):
// a block computes every phase of a strip of output rows in shared memory, on
// tensor cores or FFMA, and writes whole rows with 16-byte stores.
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include "../convt_params.h"

namespace convt {

// Width phases (the phase table lives in shared memory), the staged weights' size,
// 32-bit column arithmetic; mma: the tensor-core variant's shape (channels padded to 8).
bool strip_supports(const ConvTParams& p, at::ScalarType dtype, int co_tile, bool mma = false);
// The precisions whose products the strip kernel runs on tensor cores: fp32 as TF32, fp16, bf16.
bool strip_mma_precision(at::ScalarType dtype, bool tf32);
// The products on tensor cores: the precision allows them and that variant's shape fits.
bool strip_mma(const ConvTParams& p, at::ScalarType dtype, bool tf32, int co_tile);
// Where the heuristic takes it: a stride, and few multiply-adds an output (input
// channels a group times the taps a phase can have), so the stores dominate.
bool strip_preferred(const ConvTParams& p, at::ScalarType dtype);
// co_tile: output channels a block, 4, 8, 16 or 32; 0 picks by the group's. mma: tensor cores
// (where strip_mma holds), else FFMA.
void launch_strip(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                  int co_tile, bool mma, cudaStream_t stream);

}  // namespace convt
