// Tiled TMA maps for the Hopper kernels (convt_wg.cu, convt_wgh.cu), encoded
// through the runtime's driver entry point so the extension needs no -lcuda.
#pragma once

#include <cuda.h>

namespace convt {

// dims and box innermost first; strides in bytes for dims 1..rank-1. L2 promotion widens each box row's DRAM reads
// to 256-byte blocks by default; boxes of short rows off those blocks (the window kernel's halo rows) read less
// without it.
CUtensorMap encode_tiled_map(CUtensorMapDataType type, int rank, const void* base, const cuuint64_t* dims,
                             const cuuint64_t* strides, const cuuint32_t* box, CUtensorMapSwizzle swizzle,
                             CUtensorMapL2promotion promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B);

}  // namespace convt
