// Device facts the launches need on every call, each asked of the driver once: a kernel's dynamic shared-memory
// limit, raised once per kernel and device rather than before every launch (cudaFuncSetAttribute is a driver call, a
// function lookup under a lock, that a batch-1 decoder layer, a few microseconds of GPU time, would otherwise pay on
// each call), a device's SM count, DRAM rate and opt-in shared memory a block, and a kernel's blocks an SM.
#pragma once

#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <tuple>
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

// The device's peak DRAM bytes an SM cycle: memory clock x bus width at double data rate, over SMs x SM clock (18.4
// on an H200, 12.8 on an H100 SXM, 10.2 on an H100 PCIe). The heuristic asks it where one kernel's pace follows the
// card's DRAM rate and its rival's, bound on chip, does not.
inline double dram_bytes_per_sm_cycle(int device) {
  const double mem_khz = device_attribute(cudaDevAttrMemoryClockRate, device);
  const double bus_bytes = device_attribute(cudaDevAttrGlobalMemoryBusWidth, device) / 8.0;
  const double sm_khz = device_attribute(cudaDevAttrClockRate, device);
  return 2.0 * mem_khz * bus_bytes / (sm_count(device) * sm_khz);
}

// The device's opt-in shared memory a block, in bytes.
inline int max_smem_optin(int device) { return device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, device); }

// Blocks of a kernel one SM holds at this block size and dynamic shared memory (0 where it does not fit), asked of the
// occupancy calculator once per (kernel, threads, bytes, device): the persistent launches size their grids by it.
inline int blocks_per_sm(const void* kernel, int threads, size_t bytes, int device) {
  static std::mutex mu;
  static std::map<std::tuple<const void*, int, size_t, int>, int> known;
  const std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_tuple(kernel, threads, bytes, device);
  const auto it = known.find(key);
  if (it != known.end()) return it->second;
  int n = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, bytes));
  known[key] = n;
  return n;
}

template <typename Kernel>
int blocks_per_sm(Kernel* kernel, int threads, size_t bytes, int device) {
  return blocks_per_sm(reinterpret_cast<const void*>(kernel), threads, bytes, device);
}

}  // namespace convt
