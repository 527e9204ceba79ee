// Tiled TMA maps for the Hopper kernels (convt_wg, convt_wgh, convt_stack, convt_dwin), encoded
// through the runtime's driver entry point so the extension needs no -lcuda.
#pragma once

#include <cuda.h>

namespace convt {

struct ConvTParams;

// dims and box innermost first; strides in bytes for dims 1..rank-1. L2 promotion widens each box row's DRAM reads
// to 256-byte blocks by default; boxes of short rows off those blocks (the window kernel's halo rows) read less
// without it.
CUtensorMap encode_tiled_map(CUtensorMapDataType type, int rank, const void* base, const cuuint64_t* dims,
                             const cuuint64_t* strides, const cuuint32_t* box, CUtensorMapSwizzle swizzle,
                             CUtensorMapL2promotion promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B);

// The fp32 NCHW input x as (column, row, channel of a group, group, image), innermost first, so that a box never
// crosses a group and TMA zero-fills past the group's channels as past the image's edges. With one group the group
// dimension is dropped (rank 4) unless keep_group. A box: cols x rows x channels of one group of one image.
CUtensorMap input_map(const ConvTParams& p, const void* x, cuuint32_t cols, cuuint32_t rows, cuuint32_t channels,
                      bool keep_group, CUtensorMapL2promotion promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B);

}  // namespace convt
