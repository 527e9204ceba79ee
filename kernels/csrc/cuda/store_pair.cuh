// Two adjacent outputs from fp32 sums in one store (the columns and dense kernels' epilogues); y must be aligned to
// two elements. Included into each .cu's anonymous namespace after cuda_fp16.h, cuda_bf16.h and ATen's Half and
// BFloat16.
#pragma once

__device__ __forceinline__ void store2(float* y, float v0, float v1) {
  *reinterpret_cast<float2*>(y) = make_float2(v0, v1);
}
__device__ __forceinline__ void store2(at::Half* y, float v0, float v1) {
  *reinterpret_cast<__half2*>(y) = __floats2half2_rn(v0, v1);
}
__device__ __forceinline__ void store2(at::BFloat16* y, float v0, float v1) {
  *reinterpret_cast<__nv_bfloat162*>(y) = __floats2bfloat162_rn(v0, v1);
}
