// The dense path on wgmma (convt_dwg.cu, sm_90a): the dense kernel's stride-1 implicit GEMM (convt_dense.h) on
// Hopper's asynchronous tensor-core instruction, both operands without per-product loads: output channels are
// wgmma's M, the weights held in registers a tap; output pixels are its N, read by descriptor from a pixel-major
// copy of the input halo in shared memory, where every pixel is one 16-byte row, so a tap's shift is a descriptor
// offset. fp32 runs as TF32 only (strict fp32 stays on the dense kernel's 3xTF32).
#pragma once

#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include "../convt_params.h"

namespace convt {

// Output rows a warpgroup (1 to 4; v24's channels as N: 8), warpgroups a block (2 to 4) and output columns a row
// (wgmma's N: 64, 88 or 128); 0s: the kernel's pick.
struct DwgTile {
  int rows = 0;
  int groups = 0;
  int cols = 0;
  bool ws = false;  // v18: a producer warpgroup and G consumer warpgroups, persistent blocks
  bool pp = false;  // v18 ping-pong (ws, two consumer warpgroups): a tile is one warpgroup's rows, taken in turn
  // v24 (ws): channels as N, nc (32) a tile, and pixels as M; 0: channels as M, 64 a tile. A group of 32 or fewer
  // output channels pads M's 64 channels with zeros.
  int nc = 0;
  // ws, pp, channels as M: the tap's weights as wgmma's A from registers, shared by a warpgroup's rows (by descriptor
  // each row's wgmma reads them from shared memory again).
  bool ra = false;
};

// The operands both stride-1 wgmma kernels take (this one and the window kernel, convt_dwin.h): fp32 as TF32, fp16,
// bf16; stride 1; input rows in whole 16-byte copies and a 16-byte-aligned input; sizes within 32-bit offsets; a
// device whose loaded cubin has sm_90a features.
bool dwg_operands_ok(const ConvTParams& p, const at::Tensor& x, bool tf32);

// fp32 as TF32, fp16, bf16; stride 1; input rows in whole 16-byte copies and a 16-byte-aligned input; the halo, its
// pixel-major copy and a chunk's weights in two or more stages of shared memory; a device whose loaded cubin has
// sm_90a features.
bool dwg_supports(const ConvTParams& p, const at::Tensor& x, bool tf32, DwgTile tile = {});
void launch_dwg(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                DwgTile tile, cudaStream_t stream);

}  // namespace convt
