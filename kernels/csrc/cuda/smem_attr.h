// Device facts the launches need on every call, each asked of the driver once: a kernel's dynamic shared-memory
// limit, raised once per kernel and device rather than before every launch (cudaFuncSetAttribute is a driver call, a
// function lookup under a lock, that a batch-1 decoder layer, a few microseconds of GPU time, would otherwise pay on
// each call), and a device's SM count and opt-in shared memory a block.
#pragma once

#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <utility>

namespace convt {

inline void allow_dynamic_smem(const void* kernel, int bytes) {
  static std::mutex mu;
  static std::map<std::pair<const void*, int>, int> allowed;  // (kernel, device) -> bytes already allowed
  int device = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mu);
  int& have = allowed[{kernel, device}];
  if (bytes <= have) return;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  have = bytes;
}

template <typename Kernel>
void allow_dynamic_smem(Kernel* kernel, int bytes) {
  allow_dynamic_smem(reinterpret_cast<const void*>(kernel), bytes);
}

// A device attribute, asked of the driver once per (attribute, device).
inline int device_attribute(cudaDeviceAttr attr, int device) {
  static std::mutex mu;
  static std::map<std::pair<int, int>, int> known;
  const std::lock_guard<std::mutex> lock(mu);
  int& v = known[{static_cast<int>(attr), device}];
  if (v == 0) C10_CUDA_CHECK(cudaDeviceGetAttribute(&v, attr, device));
  return v;
}

inline int sm_count(int device) { return device_attribute(cudaDevAttrMultiProcessorCount, device); }

// The device's opt-in shared memory a block, in bytes.
inline int max_smem_optin(int device) { return device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, device); }

}  // namespace convt
