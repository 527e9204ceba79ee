// The tensor-core path: each output phase as an implicit GEMM on mma.sync.
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include "../convt_params.h"

namespace convt {

// How the fp32 products are formed on tensor cores.
enum class Fp32Mode { kTF32, k3xTF32 };

// Whether the tensor-core path takes this problem (fp32, fp16, bf16 with enough
// channels per group to fill an mma tile); the FFMA kernel takes the rest.
bool tc_supports(const ConvTParams& p, at::ScalarType dtype);

// Tile configurations the heuristic may pick; the tests force each one.
enum class TcTile { kAuto = 0, kBN32 = 32, kBN64 = 64, kBN128 = 128 };

void launch_tc(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
               Fp32Mode mode, TcTile tile, cudaStream_t stream);

}  // namespace convt
