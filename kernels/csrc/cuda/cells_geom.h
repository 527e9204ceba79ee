// What the cells kernels on one axis decomposition (convt_taps.cu, convt_stack.cu) share of their geometry: sizes,
// strides, the cells' shift and input offsets a axis, channels, k-steps and cell rows, filled on the host from the
// two axes' AxisCells; and the small divisions their threads do once, by magic multipliers.
#pragma once

#include <cstdint>

#include "../convt_params.h"
#include "cells_axis.h"

namespace convt {

struct CellsGeom {
  int hin, win, hout, wout;
  int sh, sw, ch, cw;    // stride, and the cells' shift (cell a's first output row is sh a - ch)
  int da0, db0, uh, uw;  // the least input offset a axis (cell a, offset i reads input row a + da0 + i), and how many
  int cin_g, cout_g, kw, kk, ksteps;
  int hc;                // cell rows an image
};

// kstep: input channels an mma k-step.
inline void fill_cells_geom(const ConvTParams& p, const AxisCells& h, const AxisCells& w, int kstep, CellsGeom& g) {
  g.hin = static_cast<int>(p.Hin);
  g.win = static_cast<int>(p.Win);
  g.hout = static_cast<int>(p.Hout);
  g.wout = static_cast<int>(p.Wout);
  g.sh = static_cast<int>(p.sh);
  g.sw = static_cast<int>(p.sw);
  g.ch = h.c;
  g.cw = w.c;
  g.da0 = h.d0;
  g.db0 = w.d0;
  g.uh = h.u;
  g.uw = w.u;
  g.cin_g = static_cast<int>(p.Cin_g);
  g.cout_g = static_cast<int>(p.Cout_g);
  g.kw = static_cast<int>(p.KW);
  g.kk = static_cast<int>(p.KH * p.KW);
  g.ksteps = static_cast<int>((p.Cin_g + kstep - 1) / kstep);
  g.hc = static_cast<int>((p.Hout + h.c + p.sh - 1) / p.sh);
}

// a / d == (a * magic(d)) >> 16 where a d < 2^16.
inline unsigned magic(int d) { return (65536u + unsigned(d) - 1) / unsigned(d); }
#ifdef __CUDACC__
__device__ __forceinline__ int div_small(int a, unsigned magic) {
  return static_cast<int>((unsigned(a) * magic) >> 16);
}
#endif

}  // namespace convt
