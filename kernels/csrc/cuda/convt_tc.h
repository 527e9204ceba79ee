// The tensor-core paths: each output phase as an implicit GEMM, on mma.sync
// (sm_80 and later) or on wgmma (sm_90a).
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

// The Hopper path (convt_wg.cu): wgmma fed by TMA, for fp32 as TF32, fp16 and bf16.
// Available where the device is sm_90 and the loaded cubin was built for sm_90a
// (probed once per device).
bool wg_available(int device);
bool wg_supports(const ConvTParams& p, at::ScalarType dtype);

// BN channels x 128 pixels a block, or x 256 (Tall); the tests force each one.
enum class WgTile { kAuto = 0, kBN32, kBN64, kBN64Tall, kBN128, kBN128Tall };

void launch_wg(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
               WgTile tile, cudaStream_t stream);

// The halo path (convt_wgh.cu, sm_90a, fp32 as TF32 only): TMA reads the NCHW
// input itself, one halo of rows x columns per 32-channel chunk that every tap
// of the phase shares, and wgmma takes A from registers loaded out of that halo
// at any pixel shift. No channels-last copy; A crosses L2 once per chunk, not
// once per tap.
enum class WghTile { kAuto = 0, kBN32, kBN64, kBN64Small, kBN128 };
bool wgh_supports(const ConvTParams& p, const at::Tensor& x, WghTile tile);
void launch_wgh(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                WghTile tile, cudaStream_t stream);

}  // namespace convt
