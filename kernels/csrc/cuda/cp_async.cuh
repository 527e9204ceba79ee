// cp.async as the staging kernels issue it (convt_patch.cu, convt_cols.cu): 16-byte copies global -> shared past L1
// (4-byte ones through it where rows are not 16-byte aligned), zero-filled where a copy falls outside its operand,
// committed and waited on in groups. The "memory" clobbers keep the compiler from moving shared-memory accesses
// across them. Included into each .cu's anonymous namespace.
#pragma once

// To a shared-window address: `bytes` of src (16, or 0: zero-filled, src not read).
__device__ __forceinline__ void cp_async16_n(uint32_t dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
// All or nothing: zero-filled where !valid (src is then not read).
__device__ __forceinline__ void cp_async16_zfill(void* dst, const void* src, bool valid) {
  cp_async16_n(static_cast<uint32_t>(__cvta_generic_to_shared(dst)), src, valid ? 16 : 0);
}
// One 4-byte element (through L1: .cg takes 16 bytes only), for operands whose rows are not 16-byte aligned.
__device__ __forceinline__ void cp_async4_zfill(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(dst))),
               "l"(src), "r"(valid ? 4 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
