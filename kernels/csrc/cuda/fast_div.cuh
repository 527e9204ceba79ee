// Division by a divisor fixed for a launch (an image's pixel count, a row's width), as a multiply-high and a shift:
// the hardware has no integer divide, and the compiler's sequence for a runtime divisor is ~25 dependent
// instructions. Granlund-Montgomery with a rounded-up multiplier; exact for dividends and divisors below 2^31.
// Included into each .cu's anonymous namespace.
#pragma once

struct FastDiv {
  uint32_t mul = 0, shr = 0;
  FastDiv() = default;
  explicit FastDiv(uint32_t d) {
    while ((uint32_t(1) << shr) < d) ++shr;
    mul = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << shr) - d)) / d + 1);
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const { return (__umulhi(n, mul) + n) >> shr; }
};
