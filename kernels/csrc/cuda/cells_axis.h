// Cells along one axis of a strided layer, shared by the cells and taps kernels (convt_cells.cu, convt_taps.cu): a
// cell is the s outputs one input position starts, and each of its phases reads at most one tap at each input
// offset. Host code.
#pragma once

#include <algorithm>
#include <cstdint>

#include "../convt_params.h"

namespace convt {

constexpr int kAxisMaxU = 8;   // input offsets a axis
constexpr int kAxisMaxS = 16;  // stride a axis

// Per axis, at a shift c in [0, s): cell a covers outputs s a - c .. s a - c + s - 1, and its phase r (output
// o = s a + r - c) takes tap k where r - c + pad - k * dil is a multiple of s, from input a + (r - c + pad - k * dil)
// / s; one tap a (phase, offset) at most. u: the distinct offsets its phases read, d0 the least; tab:
// [r * kAxisMaxU + i], the tap of phase r at offset d0 + i, or -1.
struct AxisCells {
  int u = 0, d0 = 0, c = 0;
  int8_t tab[kAxisMaxS * kAxisMaxU];
};

inline bool axis_offsets(int64_t s, int64_t pad, int64_t dil, int64_t K, int64_t c, AxisCells& ax) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (int64_t r = 0; r < s; ++r)
    for (int64_t k = 0; k < K; ++k) {
      const int64_t t = r - c + pad - k * dil;
      if (floor_mod(t, s) == 0) {
        lo = std::min(lo, t / s);
        hi = std::max(hi, t / s);
      }
    }
  if (hi - lo + 1 > kAxisMaxU || lo < -(int64_t(1) << 30) || hi > (int64_t(1) << 30)) return false;
  ax.u = static_cast<int>(hi - lo + 1);
  ax.d0 = static_cast<int>(lo);
  ax.c = static_cast<int>(c);
  std::fill(ax.tab, ax.tab + kAxisMaxS * kAxisMaxU, int8_t(-1));
  for (int64_t r = 0; r < s; ++r)
    for (int64_t k = 0; k < K; ++k) {
      const int64_t t = r - c + pad - k * dil;
      if (floor_mod(t, s) == 0) ax.tab[r * kAxisMaxU + (t / s - lo)] = static_cast<int8_t>(k);
    }
  return true;
}

// An axis's candidates: no shift, and the shift whose phases read the fewest offsets (FSRCNN's 9x9 stride 3 reads
// 4 unshifted and 3 at c = 1; DCGAN's 4x4 stride 2 reads 3, then 2). Returns how many fit (0-2).
inline int axis_candidates(int64_t s, int64_t pad, int64_t dil, int64_t K, AxisCells (&out)[2]) {
  if (s > kAxisMaxS || (K - 1) * dil > s * (kAxisMaxU + 1)) return 0;
  int n = 0;
  if (axis_offsets(s, pad, dil, K, 0, out[0])) ++n;
  AxisCells best;
  for (int64_t c = 1; c < s; ++c) {
    AxisCells ax;
    if (axis_offsets(s, pad, dil, K, c, ax) && (best.u == 0 || ax.u < best.u)) best = ax;
  }
  if (best.u != 0 && (n == 0 || best.u < out[0].u)) out[n++] = best;
  return n;
}

}  // namespace convt
