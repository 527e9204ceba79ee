// The tiled tensor-map encoder (tma_map.h), one for every kernel that loads by TMA.
#include "tma_map.h"

#include "../convt_params.h"

#include <c10/util/Exception.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <mutex>
#include <string>

namespace convt {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess) {
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
    }
  });
  TORCH_CHECK(fn != nullptr, "convt: cuTensorMapEncodeTiled is not available from the CUDA driver");
  return fn;
}

}  // namespace

CUtensorMap encode_tiled_map(CUtensorMapDataType type, int rank, const void* base, const cuuint64_t* dims,
                             const cuuint64_t* strides, const cuuint32_t* box, CUtensorMapSwizzle swizzle,
                             CUtensorMapL2promotion promotion) {
  CUtensorMap map;
  const cuuint32_t ones[5] = {1, 1, 1, 1, 1};
  const CUresult r = encode_fn()(&map, type, rank, const_cast<void*>(base), dims, strides, box, ones,
                                 CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, promotion,
                                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::string shape;
    for (int i = 0; i < rank; ++i) {
      shape += " dim" + std::to_string(i) + "=" + std::to_string(dims[i]) + " box=" + std::to_string(box[i]) +
               (i > 0 ? " stride=" + std::to_string(strides[i - 1]) : "");
    }
    TORCH_CHECK(false, "convt: cuTensorMapEncodeTiled failed with CUresult ", static_cast<int>(r), ":", shape);
  }
  return map;
}

CUtensorMap input_map(const ConvTParams& p, const void* x, cuuint32_t cols, cuuint32_t rows, cuuint32_t channels,
                      bool keep_group, CUtensorMapL2promotion promotion) {
  // Without the group dimension the image's stride follows the channels' at index 2: with one group Cin_g is Cin.
  const int rank = p.groups > 1 || keep_group ? 5 : 4;
  const cuuint64_t row = cuuint64_t(p.Win) * 4, plane = row * cuuint64_t(p.Hin);
  const cuuint64_t dims[5] = {cuuint64_t(p.Win), cuuint64_t(p.Hin), cuuint64_t(p.Cin_g),
                              rank == 5 ? cuuint64_t(p.groups) : cuuint64_t(p.N), cuuint64_t(p.N)};
  const cuuint64_t strides[4] = {row, plane, plane * cuuint64_t(p.Cin_g), plane * cuuint64_t(p.Cin)};
  const cuuint32_t box[5] = {cols, rows, channels, 1, 1};
  return encode_tiled_map(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, rank, x, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_NONE,
                          promotion);
}

}  // namespace convt
