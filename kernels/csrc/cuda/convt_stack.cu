// The stack path (see convt_stack.h). A block is two warpgroups; it owns a strip of 64 input columns of one image and
// group and walks a segment of its cell rows (cells_axis.h: the sh x sw outputs one input position starts, shifted so
// their taps read the fewest offsets), one cell row an iteration:
//   - products: wgmma m64n32, A = the strip's 64 pixels (warp w's 16 from registers, loaded straight from the NCHW
//     input in mma's A layout: a register's 8 pixels x 4 channels are four whole 32-byte sectors), B = the weights
//     (product n) x (height offset i, input channel k), K-major in shared memory, staged once a block. The two
//     warpgroups split K: each takes half of every row's channels, so a warp loads, rounds and multiplies half as
//     much a cell row, and a block keeps twice the warps on one strip (v42: FSRCNN at 16 warps an SM, not 12). An
//     input row's fragments are loaded and rounded once and kept in registers (a set a row, uh sets) for the uh cell
//     rows that read it, so the tensor cores sum the height taps;
//   - col2im: each warpgroup's products go to its shared-memory buffer as [product][pixel], and each output sums its
//     uw width taps' products in both buffers, in a fixed order, and is written once. The buffers are double: row
//     c - 1's sums run while row c's wgmma does.
// Against the taps kernel, an output reads uw products a warpgroup, not uh x uw, and a pixel stores Cout/g x sh x sw x
// uw products a cell row, not Cout/g x sh x uh x sw x uw an input row (FSRCNN: 3 and 27 against 9 and 81).
#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cells_geom.h"
#include "convt_stack.h"
#include "convt_tc.h"
#include "smem_attr.h"
#include "tma_map.h"
#include "wgmma_ops.h"

namespace convt {
namespace {

#include "mma_sync.cuh"
#include "wg_ptx.cuh"

constexpr int kWgs = 2;       // warpgroups a block: warpgroup v takes the k-steps v KS .. v KS + KS - 1 of every row
constexpr int kThreads = 128 * kWgs;
constexpr int kPx = 64;        // input columns a strip: wgmma's M
constexpr int kN = 32;         // a pixel's products, padded: wgmma's N
constexpr int kMaxCin = 64;    // input channels a group
constexpr int kMaxU = 4;       // width offsets
constexpr int kItems = 3;      // the col2im's outputs a thread a cell row
// Floats a product row of the buffer: 64 pixels and 4 more, so that an accumulator store (lanes' rows 2t apart,
// pixels g) covers 32 banks.
constexpr int kPitch = 68;
constexpr int kBufFloats = 2 * kN * kPitch;  // a warpgroup's double buffer
constexpr int kBlockBytes = 1024;  // one (k-step, height offset)'s weights: 32 products x 32 bytes of channels
// TF32 on 16-byte-aligned rows: the input rows come by TMA, the first uh at the block's start (v66, below), the rest
// into a ring of shared-memory slots,
// kPre rows ahead, issued by one thread, rather than by each thread's loads one cell row ahead (v42, whose cell rows
// waited on them). Two slots, each refilled as soon as every thread has read it: a third (v43d) made a block 112 KB
// of shared memory, which left the SM 28 KB of L1 (60 KB at two slots), and the first rows' loads, through L1, took
// 0.5 us longer (kernel-notes v44). The first kPre go once the block's first uh rows have landed: every block asks
// for its first rows at once, so DRAM is the limit then, and ring rows asked for with them delay them (v43d). A slot
// is one box, kBoxPx columns x 16 KS channels, unswizzled. A box's first column must sit on 16 bytes (TMA traps
// otherwise: bench.tma_probe, session 43); it starts at the strip's pixel 0, which TF32 puts on 32 bytes (align_px).
// 72 columns are the pitch (8 banks a channel) at which a warp's reads of its A fragments, channels t and t + 4 at
// pixels g and g + 8, hit 32 banks.
constexpr int kRing = 2;
constexpr int kBoxPx = kPx + 8;
// TF32: a strip's pixel 0 is its first input column rounded down to 8 floats, so that a load's 8 pixels are one
// 32-byte sector, not two (Nsight Compute on v44: 46% of the global sectors excess, FSRCNN's strips starting at
// 52 s - 1); the products then sit a shift of 0-7 pixels along, so a strip is 7 cell columns narrower at most. It
// took the batch-4 FSRCNN probe ~1 us faster, FSRCNN ~0.2 (session 45); FSRCNN in fp16 was slower with it (its 8-pixel
// loads are 16 bytes, half a sector either way), so the half types keep the shift 0.
constexpr int align_px(int elem) { return elem == 4 ? 8 : 1; }
constexpr int kChBytes = kBoxPx * 4;
constexpr int kSlotBytes(int ks) { return 16 * ks * kChBytes; }
constexpr int kAlign = 128;  // a TMA destination's alignment
constexpr int kPre = 2;  // ring rows in flight: a row's slot is refilled kPre cell rows before it is read

// bench/stack_trace.py builds this file with CONVT_STACK_TRACE to time one block's phases (thread 0's clock after
// each block barrier; %globaltimer at its start and end, to place blocks against one another). Compiled out otherwise.
#ifdef CONVT_STACK_TRACE
constexpr int kTraceBlocks = 4096, kTraceSlots = 16, kTraceRows = 10;
__device__ unsigned long long stack_trace[kTraceBlocks][kTraceSlots];
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}
#define STACK_MARK(slot, value)                                                                       \
  do {                                                                                                \
    const unsigned b_ = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);               \
    if (threadIdx.x == 0 && b_ < kTraceBlocks) stack_trace[b_][slot] = (value);                        \
  } while (0)
#else
#define STACK_MARK(slot, value) \
  do {                          \
  } while (0)
#endif

struct StackGeom : CellsGeom {
  int np;                // a pixel's products, Cout/g x sh x sw x uw: (output channel, r, q, width offset j)
  int sc;                // cell columns a strip
  int strips;            // strips an image
  int items;             // the col2im's outputs a cell row of a strip: Cout/g x sh x sw x sc
  int rseg = 0;          // cell rows a segment (set by the launch, which knows the occupancy)
  int tma_ch = 0;        // the ring: channels a box, min(16 KS, Cin/g) (set by the launch)
  unsigned m_sc, m_sw, m_sh;  // magic multipliers (cells_geom.h) of the col2im's decode, once a thread
  int nsm = 0;           // the device's SMs: the blocks dispatched first, one an SM (set by the launch)
  // Product n's weight column at height offset i, (output channel, kh, kw) flattened, or -1 where phase r has no tap
  // at offset i, q none at j, or n is padding: decoded on the host, not in every block.
  alignas(16) int wcol[3][kN];  // 16-byte aligned: wcol_of's reads
};

// An fp32's bits rounded to TF32 (half an ulp away from zero; the mma reads the upper 19 bits), Inf and NaN left as
// they are: the finiteness test on the FP pipe leaves one compare and an add (predicated, or with a select).
__device__ __forceinline__ uint32_t tf32_finite(uint32_t v) {
  return fabsf(__uint_as_float(v)) < __uint_as_float(0x7f800000u) ? v + 0x1000u : v;
}

// Lane n's product's weight column at height offset i. g.wcol[i][n] read by every lane is 32 constant-cache addresses,
// which the cache serves one after another ahead of the weights' loads (Nsight Compute, session 46: the prologue's
// most sampled stalls after the loads themselves); here lanes 0-7 read 16 bytes each and four shuffles hand them out.
// Measured (session 46, side by side): fp16 FSRCNN 14.0-14.2 us against 14.7-14.8 without it; TF32 0.1-0.3 slower
// with it in two calls, so TF32 keeps the direct read.
template <bool kShuffled>
__device__ __forceinline__ int wcol_of(const StackGeom& g, int i, int n) {
  if constexpr (kShuffled) {
    const int4 q = reinterpret_cast<const int4*>(g.wcol[i])[n & 7];
    const int from = n >> 2;
    const int c0 = __shfl_sync(0xffffffffu, q.x, from), c1 = __shfl_sync(0xffffffffu, q.y, from);
    const int c2 = __shfl_sync(0xffffffffu, q.z, from), c3 = __shfl_sync(0xffffffffu, q.w, from);
    return (n & 2) ? ((n & 1) ? c3 : c2) : ((n & 1) ? c1 : c0);
  } else {
    return g.wcol[i][n];
  }
}

// UH: the height offsets, uh, at compile time (2 or 3), so each input row's register set has a fixed name in the loop
// (unrolled by UH). KS: a warpgroup's k-steps a row, at compile time (the group's channels padded with zeros to
// 2 KS k-steps of 8 TF32 or 16 half channels), so a cell row's wgmma sequence has no branch: ptxas puts a
// warpgroup.arrive wherever control flow enters one.
// TMA: rows UH.. through the ring (TF32 only).
template <typename T, int UH, int KS, bool TMA>
__global__ void __launch_bounds__(kThreads, 2)
    convt_stack_kernel(const __grid_constant__ CUtensorMap xmap, const ConvTParams p, const StackGeom g,
                       const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                       T* __restrict__ y) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr bool kHalf = sizeof(T) == 2;
  constexpr int kK = kHalf ? 16 : 8;        // channels a k-step
  constexpr int kKS = KS;
  constexpr int kLd = kHalf ? 8 : 4;        // loads a k-step a thread
  constexpr int kCh = kLd / 2;              // channels a k-step a thread, at two pixels each
  using Op = typename wg::OpFor<T>::type;
  using Bits = std::conditional_t<kHalf, uint16_t, uint32_t>;
  static_assert(!(TMA && kHalf), "the ring takes TF32 rows");
  static_assert(!TMA || align_px(sizeof(T)) % 4 == 0, "a TMA box starts on 16 bytes");
  constexpr int kSlot = TMA ? kSlotBytes(KS) : 0;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  // [ring slots][buffers][weights][the slots' barriers]
  uint8_t* smem = TMA ? smem_raw + ((kAlign - (smem_addr(smem_raw) & (kAlign - 1))) & (kAlign - 1)) : smem_raw;
  uint8_t* ring = smem;
  float* buf = reinterpret_cast<float*>(smem + kRing * kSlot);  // [warpgroup][2][product][kPitch]
  uint8_t* wsm = smem + kRing * kSlot + kWgs * kBufFloats * 4;  // [k-step][offset]: kBlockBytes each
  uint64_t* full = reinterpret_cast<uint64_t*>(wsm + kWgs * kKS * UH * kBlockBytes);  // a slot's row has landed
  uint64_t* first = full + kRing;  // TMA: first row r has landed (where first_dst(r) puts it)
  const int tid = threadIdx.x, lane = tid & 31, warp = (tid >> 5) & 3, img = blockIdx.y, grp = blockIdx.z;
#ifdef CONVT_STACK_TRACE
  unsigned smid_;
  asm volatile("mov.u32 %0, %smid;" : "=r"(smid_));
  STACK_MARK(0, global_ns());
  STACK_MARK(1, smid_);
  STACK_MARK(2, clock64());
#endif
  // The warpgroup, from lane 0 so the compiler knows it is warp-uniform (the descriptors live in uniform registers).
  const int wgi = __shfl_sync(0xffffffffu, tid >> 7, 0);
  const int ks0 = wgi * kKS;  // the warpgroup's first k-step
  const int gq = lane >> 2, t = lane & 3;

  const int seg = blockIdx.x / g.strips, strip = blockIdx.x - seg * g.strips;
  const int a0 = seg * g.rseg, b0 = strip * g.sc;
  const int ncell = min(g.rseg, g.hc - a0);
  const int nrows = ncell + UH - 1;  // input rows the segment's cells read

  // A = the input, (pixel m) x (channel k): a0..a3 hold (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4) for TF32, and
  // the pairs (g, 2t), (g + 8, 2t), (g, 2t + 8), (g + 8, 2t + 8) for half types, of warp w's pixels 16 w... Load l
  // reads channel slot ch(l) at pixel px(l). A load's address is a 32-bit offset from a row's pointer: the channel's
  // plane offset, fixed for the block (or -1 past the group's channels), on a row pointer clamped into the image once
  // a row, so every load is legal; those outside the image or the channels are predicated off to zero.
  const unsigned hw = unsigned(g.hin) * unsigned(g.win);
  const Bits* src = opaque(reinterpret_cast<const Bits*>(x) + (int64_t(img) * p.Cin + int64_t(grp) * g.cin_g) * hw);
  // Pixel m is input column x0 + m; the products of cell column bl at width offset j are pixel bl + j + shift.
  const int x0 = (b0 + g.db0) & ~(align_px(sizeof(T)) - 1), shift = b0 + g.db0 - x0;
  const int ix0 = x0 + 16 * warp + gq;
  // Pixels past the strip's last read load nothing (a strip reads sc + uw - 1 of its 64).
  const int mlast = shift + g.sc + g.uw - 1, m0 = 16 * warp + gq;
  const bool px_in[2] = {m0 < mlast && ix0 >= 0 && ix0 < g.win, m0 + 8 < mlast && ix0 + 8 >= 0 && ix0 + 8 < g.win};
  const unsigned pxc[2] = {unsigned(min(max(ix0, 0), g.win - 1)), unsigned(min(max(ix0 + 8, 0), g.win - 1))};
  auto ch = [](int l) { return kHalf ? (l & 1) + 2 * (l >> 2) : l >> 1; };
  auto px = [](int l) { return kHalf ? (l >> 1) & 1 : l & 1; };
  int coff[kKS][kCh];
#pragma unroll
  for (int ks = 0; ks < kKS; ++ks)
#pragma unroll
    for (int c = 0; c < kCh; ++c) {
      const int k = kHalf ? (ks0 + ks) * 16 + 2 * t + (c & 1) + 8 * (c >> 1) : (ks0 + ks) * 8 + t + 4 * c;
      coff[ks][c] = k < g.cin_g ? int(unsigned(k) * hw) : -1;
    }
  uint32_t set[UH][kKS][4];  // a row's A fragments: TF32 words, or packed half pairs
  uint32_t raw[kHalf ? kKS : 1][kLd];  // half types: a row's loads in flight, a 16-bit element a register
  // Issues row R's loads into `dst` (TF32: the set itself; half: raw).
  auto issue = [&](int R, uint32_t (&dst)[kKS][kLd]) {
    const int iy = a0 + g.da0 + R;
    const bool row_in = R < nrows && iy >= 0 && iy < g.hin;
    const unsigned rowoff = unsigned(min(max(iy, 0), g.hin - 1)) * unsigned(g.win);
    // Materialized once a row, so each load adds its channel's offset to it (one IMAD.WIDE) rather than a 64-bit sum
    // of all three.
    const Bits* rp[2] = {opaque(src + (rowoff + pxc[0])), opaque(src + (rowoff + pxc[1]))};
    const bool ok[2] = {row_in && px_in[0], row_in && px_in[1]};
#pragma unroll
    for (int ks = 0; ks < kKS; ++ks) {
      if (ks0 + ks < g.ksteps) {
#pragma unroll
        for (int l = 0; l < kLd; ++l) {
          const int o = coff[ks][ch(l)];
          dst[ks][l] = ok[px(l)] && o >= 0 ? uint32_t(__ldg(rp[px(l)] + unsigned(o))) : 0u;
        }
      } else {
#pragma unroll
        for (int l = 0; l < kLd; ++l) dst[ks][l] = 0u;
      }
    }
  };
  // Makes a row's loads its A fragments: TF32 rounded in place; half pairs packed (k even low) from raw.
  auto finish = [&](uint32_t (&s)[kKS][4]) {
#pragma unroll
    for (int ks = 0; ks < kKS; ++ks) {
      if constexpr (kHalf) {
#pragma unroll
        for (int r = 0; r < 4; ++r) s[ks][r] = raw[ks][2 * r] | raw[ks][2 * r + 1] << 16;
      } else {
#pragma unroll
        for (int r = 0; r < 4; ++r) s[ks][r] = tf32_finite(s[ks][r]);
      }
    }
  };
  auto issue_into = [&](int R, uint32_t (&s)[kKS][4]) {
    if constexpr (kHalf) issue(R, raw);
    else issue(R, s);
  };
  // The ring: row R lands in slot r as one box of the group's channels from column x0 (TMA zero-fills past the
  // image's rows and columns); thread 0 issues.
  auto tma_row = [&](int R, int r) {
    if constexpr (TMA) {
      if (R < nrows) {
        uint8_t* dst = ring + r * kSlot;
        const int yc = a0 + g.da0 + R;
        mbar_expect_tx(&full[r], kChBytes * g.tma_ch);
        if (p.groups > 1) tma_load_5d(dst, &xmap, &full[r], x0, yc, 0, grp, img);
        else tma_load_4d(dst, &xmap, &full[r], x0, yc, 0, img);
      }
    }
  };
  // Slot r's row as a thread's A fragments, rounded: per k-step, channels t and t + 4 at pixels g and g + 8.
  const uint32_t toff = uint32_t((ks0 * 8 + t) * kChBytes + 4 * (16 * warp + gq));
  auto take_from = [&](uint32_t (&s)[kKS][4], const uint8_t* base) {
    const uint32_t a = smem_addr(base) + toff;
#pragma unroll
    for (int ks = 0; ks < kKS; ++ks) {
      uint32_t v[4];
#pragma unroll
      for (int e = 0; e < 4; ++e)
        asm volatile("ld.shared.u32 %0, [%1];\n"
                     : "=r"(v[e])
                     : "r"(a + uint32_t((8 * ks + 4 * (e >> 1)) * kChBytes + 32 * (e & 1))));
#pragma unroll
      for (int e = 0; e < 4; ++e) s[ks][e] = tf32_finite(v[e]);
    }
  };
  auto take_row = [&](uint32_t (&s)[kKS][4], int r) { take_from(s, ring + r * kSlot); };
  // The first rows by TMA too: row 0 into the buffers' space (free until cell row 0's products), rows 1 .. into the
  // ring's slots, which the ring takes over once every thread has read them. Loaded by every thread, they were 48
  // 4-byte loads a thread, 2.5 us to issue on an H200 (kernel-notes, session 68); by TMA, FSRCNN TF32 15.17 -> 14.94 us
  // side by side on an H100 (v66), 14.46 -> 14.02 on an H200.
  // Where the group's channels leave only warpgroup 1's skipped k-step as padding (FSRCNN) and two boxes of them fit
  // the buffers' space, rows 0 and 1 go there and slot 0 stays free for a later block's first ring row.
  const int cbytes = g.tma_ch * kChBytes;
  const bool two_in_buf = TMA && g.tma_ch == 8 * (2 * KS - 1) && 2 * cbytes <= kWgs * kBufFloats * 4 && cbytes % 128 == 0;
  auto first_dst = [&](int r) {
    uint8_t* b = reinterpret_cast<uint8_t*>(buf);
    return r == 0 ? b : two_in_buf ? (r == 1 ? b + cbytes : ring + kSlot) : ring + (r - 1) * kSlot;
  };
  // The blocks come one an SM first, then the second of each SM. A second block's first rows land behind its
  // partner's, and its first ring row, asked for once they have, waits in the DRAM queue a second time: on FSRCNN
  // TF32 such a block took 1.1 us longer than its partner (cell row 0 2.2 us against 1.6; kernel-notes v62), and
  // set the span. So the blocks dispatched after the first one an SM ask for that row at their start (FSRCNN TF32
  // 15.3 -> 15.0 us of GPU time on an H200); every block asking for it there, or for two rows, was no faster.
  // It takes slot 0, which is free at the start only where rows 0 and 1 sit in the buffers' space.
  const int early =
      two_in_buf && blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z) >= unsigned(g.nsm) ? 1 : 0;
  if constexpr (TMA) {
    if (tid == 0) {
#pragma unroll
      for (int r = 0; r < kRing + UH; ++r) mbar_init(&full[r], 1);
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
      if (early) tma_row(UH, 0);
#pragma unroll
      for (int r = 0; r < UH; ++r) {
        const int yc = a0 + g.da0 + r;
        mbar_expect_tx(&first[r], kChBytes * g.tma_ch);
        if (p.groups > 1) tma_load_5d(first_dst(r), &xmap, &first[r], x0, yc, 0, grp, img);
        else tma_load_4d(first_dst(r), &xmap, &first[r], x0, yc, 0, img);
      }
    }
    // A box holds the group's channels only: the slots' channels past them, which the weights' zeros multiply (NaN
    // times zero is NaN), are zeroed once here, before the weights' barrier.
    const int pad_words = (16 * KS - g.tma_ch) * kBoxPx;
    for (int i = tid; i < kRing * pad_words; i += kThreads) {
      const int b = i / pad_words, e = i - b * pad_words;
      reinterpret_cast<uint32_t*>(ring + b * kSlot + g.tma_ch * kChBytes)[e] = 0u;
    }
    for (int e = tid; e < (two_in_buf ? 0 : pad_words); e += kThreads)  // row 0's, in the buffers' space
      reinterpret_cast<uint32_t*>(reinterpret_cast<uint8_t*>(buf) + g.tma_ch * kChBytes)[e] = 0u;
  }

  // Loads: rows 0 .. UH - 2 finished before the loop; row UH - 1 in flight into it (its set finished at cell row 0).
  if constexpr (!TMA) issue_into(0, set[0]);
#pragma unroll
  for (int s = 0; s + 1 < (TMA ? 1 : UH); ++s) {
    if constexpr (kHalf) {
      finish(set[s]);
      issue_into(s + 1, set[s + 1]);
    } else {
      issue_into(s + 1, set[s + 1]);
    }
  }

  // B = the weights: block (ks, i) holds (product n) x (channel k of k-step ks) at height offset i, K-major without
  // swizzle: 16-byte core rows, the n-adjacent 8-row groups 128 bytes apart, the two k-halves 512 apart. Product
  // n = ((co sh + r) sw + q) uw + j takes w[k][co][th(r, i)][tw(q, j)] (column g.wcol[i][n]), or zero where phase r
  // has no tap at offset i, q none at j, or n is padding. Thread (warp v, lane n) fills product n's 16-byte rows
  // (k-step, half) v, v + 8, ... of every offset: all its loads in flight at once, one trip to L2.
  {
    constexpr int kWarps = kThreads / 32;
    constexpr int kRows = 2 * kWgs * kKS;  // 16-byte rows a product and offset: (k-step, half)
    constexpr int kPer = (kRows + kWarps - 1) / kWarps;  // a warp's rows, the last maybe past kRows
    constexpr int kE = kK / 2;             // channels a row
    const int n = lane, v = tid >> 5, ncol = g.kk * g.cout_g;
    const Bits* wq = opaque(reinterpret_cast<const Bits*>(w) + int64_t(grp) * g.cin_g * ncol);
    uint32_t e[UH][kPer][kE];
#pragma unroll
    for (int i = 0; i < UH; ++i) {
      const int c = wcol_of<kHalf>(g, i, n);
#pragma unroll
      for (int u = 0; u < kPer; ++u) {
        const int k0 = (v + kWarps * u) * kE;
#pragma unroll
        for (int kk = 0; kk < kE; ++kk) {
          const int k = k0 + kk;
          e[i][u][kk] =
              c >= 0 && k < g.cin_g && v + kWarps * u < kRows ? uint32_t(__ldg(wq + unsigned(k * ncol + c))) : 0u;
        }
      }
    }
#pragma unroll
    for (int i = 0; i < UH; ++i)
#pragma unroll
      for (int u = 0; u < kPer; ++u) {
        const int row = v + kWarps * u, ks = row >> 1;
        if (kRows % kWarps != 0 && row >= kRows) continue;
        const uint32_t* q = e[i][u];
        uint4 q4;
        if constexpr (kHalf) q4 = make_uint4(q[0] | q[1] << 16, q[2] | q[3] << 16, q[4] | q[5] << 16, q[6] | q[7] << 16);
        else q4 = make_uint4(tf32_bits(q[0]), tf32_bits(q[1]), tf32_bits(q[2]), tf32_bits(q[3]));
        *reinterpret_cast<uint4*>(wsm + (ks * UH + i) * kBlockBytes + (n >> 3) * 128 + (n & 7) * 16 + (row & 1) * 512) =
            q4;
      }
  }

  // The col2im's outputs: item e = tid + threads k is (output channel co, height phase r, width phase q, cell column
  // bl), bl fastest so a warp's reads of a product row are consecutive pixels. sb: its first product's buffer offset,
  // r in bits 16 and up, or -1 where it is past the items or its column is outside the image; go: co's plane and its
  // column, and for TF32 its row at the segment's first cell row too (kStepGo).
  // TF32: an output's offset is go plus a cell row's uniform step, one add and a 32-bit index, not its row times the
  // width and a 64-bit sum (FSRCNN TF32 14.85-14.94 -> 14.62 us side by side on an H200, the probes 0.2-0.3 faster;
  // the half types 0.3-0.4 slower with it, so they keep the row product; kernel-notes v64).
  constexpr bool kStepGo = !kHalf;
  int it_sb[kItems], it_go[kItems];
  float it_b[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int e = tid + kThreads * k;
    const int rq = div_small(e, g.m_sc), bl = e - rq * g.sc, cr = div_small(rq, g.m_sw), q = rq - cr * g.sw;
    const int co = div_small(cr, g.m_sh), r = cr - co * g.sh;
    const int ox = (b0 + bl) * g.sw - g.cw + q;
    const bool ok = e < g.items && ox >= 0 && ox < g.wout;
    it_sb[k] = ok ? (rq * g.uw * kPitch + bl + shift) | (r << 16) : -1;
    it_go[k] = ok ? co * g.hout * g.wout + ox + (kStepGo ? (a0 * g.sh - g.ch + r) * g.wout : 0) : 0;
    it_b[k] = ok && bias != nullptr ? static_cast<float>(bias[int64_t(grp) * g.cout_g + co]) : 0.f;
  }
  T* yb = y + (int64_t(img) * p.Cout + int64_t(grp) * g.cout_g) * (int64_t(g.hout) * g.wout);
  // Each output sums its uw products in each warpgroup's buffer, then the warpgroups' partial sums in order, then the
  // bias: a chain of 4 dependent adds at uw = 3 rather than 6 through both buffers (FSRCNN and the probes 0.03-0.13 us
  // faster in every case, and 104 registers, not 111, in the TF32 ring kernel; kernel-notes, session 65).
  auto col2im = [&](int c) {
    const float* bc = buf + (c & 1) * (kN * kPitch);
    const int oyb = (a0 + c) * g.sh - g.ch, cstep = c * g.sh * g.wout;
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int sb = it_sb[k];
      const int oy = oyb + (sb >> 16);
      if (sb >= 0 && (kStepGo ? unsigned(oy) < unsigned(g.hout) : oy >= 0 && oy < g.hout)) {
        const float* pr = bc + (sb & 0xffff);
        float part[kWgs];
#pragma unroll
        for (int v = 0; v < kWgs; ++v) {
          part[v] = pr[v * kBufFloats];
#pragma unroll
          for (int j = 1; j < kMaxU; ++j)
            if (j < g.uw) part[v] += pr[v * kBufFloats + j * (kPitch + 1)];
        }
        float sum = part[0];
#pragma unroll
        for (int v = 1; v < kWgs; ++v) sum += part[v];
        sum += it_b[k];
        if constexpr (kStepGo) yb[unsigned(it_go[k] + cstep)] = static_cast<T>(sum);  // >= 0 where stored
        else yb[it_go[k] + oy * g.wout] = static_cast<T>(sum);
      }
    }
  };

  fence_async_smem();
  __syncthreads();  // the weights
  STACK_MARK(3, clock64());
  if constexpr (!kHalf) {
#pragma unroll
    for (int s = 0; s + 1 < (TMA ? 1 : UH); ++s) finish(set[s]);
  }
  if constexpr (TMA) {  // the first rows from shared memory; once every thread has read them, the ring's first rows
#pragma unroll
    for (int r = 0; r < UH; ++r) mbar_wait(&first[r], 0);  // a row's take reads past its box, into the next row's
#pragma unroll
    for (int r = 0; r < UH; ++r) take_from(set[r], first_dst(r));
    __syncthreads();
    if (tid == 0) {
#pragma unroll
      for (int r = early; r < kPre; ++r) tma_row(UH + r, r);
    }
  }
  int slot = 0, phase = 0;  // the ring: row c + UH's slot at cell row c, and the parity of its barrier's phase

  const uint32_t wlo = desc_lo(smem_addr(wsm + ks0 * UH * kBlockBytes), 512);
  // Half types: two accumulator sets, k-steps alternating, so that a warpgroup's products are two chains of wgmma,
  // not one (FSRCNN fp16 13.9 -> 13.5 us on an H200). TF32 keeps one: two made it 0.4 us slower (128 registers).
  constexpr int kSets = kHalf && kKS >= 2 ? 2 : 1;
  float acc[kSets][16];
#pragma unroll
  for (int a = 0; a < kSets; ++a)
#pragma unroll
    for (int e = 0; e < 16; ++e) acc[a][e] = 0.f;
  // TF32: where the group's channels leave a warpgroup's last k-step all padding (FSRCNN: 56 channels, 7 k-steps of
  // 8, 4 a warpgroup: warpgroup 1's fourth), it skips that k-step's wgmma, 1/8 of the block's tensor work there:
  // FSRCNN TF32 14.59 -> 14.50 us side by side on an H200, its cell rows 0.03-0.05 us faster each (kernel-notes v65).
  constexpr bool kSkipPad = !kHalf && kKS >= 2;
  const bool pad_ks = kSkipPad && ks0 + kKS - 1 >= g.ksteps;
  // Accumulator d[4 nt + e]: pixel 16 w + g (+ 8 for e >= 2), product 8 nt + 2t + (e & 1).
  float* srow = buf + wgi * kBufFloats + (2 * t) * kPitch + 16 * warp + gq;
  for (int c0 = 0; c0 < ncell; c0 += UH) {
#pragma unroll
    for (int ph = 0; ph < UH; ++ph) {
      const int c = c0 + ph;
      if (c < ncell) {
        if constexpr (!TMA) finish(set[(ph + UH - 1) % UH]);  // the row cell row c reads last, in flight until now
        // Two commit groups: the oldest row's products first, so its set takes the next row's loads as soon as they
        // retire, under the other rows' wgmma and the sums of cell row c - 1. nks: the warpgroup's k-steps.
        auto products = [&](auto nks_c) {
          constexpr int nks = decltype(nks_c)::value;
          wgmma_fence();
#pragma unroll
          for (int i = 0; i < UH; ++i) {
#pragma unroll
            for (int ks = 0; ks < nks; ++ks) {
              const uint64_t db = desc_words(128 >> 4, wlo + uint32_t(((ks * UH + i) * kBlockBytes) >> 4));
              wg::WgmmaRs<Op, kN>::run(acc[ks % kSets], set[(ph + i) % UH][ks], db, ks >= kSets || i > 0 ? 1 : 0);
            }
            if (i == 0) wgmma_commit();
          }
          wgmma_commit();
        };
        if (kSkipPad && pad_ks) products(std::integral_constant<int, kKS - 1>{});
        else products(std::integral_constant<int, kKS>{});
        wgmma_wait<1>();
        // Row c's set, read for the last time by the first group, takes row c + UH: from its slot, or its loads.
        if constexpr (TMA) {
          if (c + UH < nrows) {
            mbar_wait(&full[slot], phase);
            take_row(set[ph], slot);
          }
        } else if (c + UH < nrows) {
          issue_into(c + UH, set[ph]);
        }
        if (c > 0) col2im(c - 1);
        wgmma_wait<0>();
        fence_regs(acc[0]);
        if constexpr (kSets == 2) {
          fence_regs(acc[1]);
#pragma unroll
          for (int e = 0; e < 16; ++e) acc[0][e] += acc[1][e];
        }
        float* sr = srow + (c & 1) * (kN * kPitch);
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) sr[(8 * nt + (e & 1)) * kPitch + 8 * (e >> 1)] = acc[0][4 * nt + e];
        __syncthreads();
        if constexpr (TMA) {  // every thread has read slot c's row: row c + UH + kPre takes slot c + kPre
          if (tid == 0) tma_row(c + UH + kPre, slot + kPre >= kRing ? slot + kPre - kRing : slot + kPre);
          if (++slot == kRing) {
            slot = 0;
            phase ^= 1;
          }
        }
#ifdef CONVT_STACK_TRACE
        if (c < kTraceRows) STACK_MARK(4 + c, clock64());
#endif
      }
    }
  }
  col2im(ncell - 1);
#ifdef CONVT_STACK_TRACE
  STACK_MARK(14, clock64());
  STACK_MARK(15, global_ns());
#endif
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
}

// The ring (TF32): rows whose strides and start are 16-byte aligned, at least a box wide.
bool ring_fits(const ConvTParams& p, const at::Tensor& x) {
  return x.scalar_type() == at::kFloat && p.Win % 4 == 0 && p.Win >= kBoxPx &&
         reinterpret_cast<uintptr_t>(x.const_data_ptr()) % 16 == 0;
}

// False where the shape is outside the kernel's limits (convt_stack.h). Each axis takes the shift whose taps read the
// fewest offsets.
bool geometry(const ConvTParams& p, int elem, StackGeom& g) {
  if (p.Cin_g > kMaxCin || p.KH > 127 || p.KW > 127) return false;
  AxisCells ah[2], aw[2];
  const int nh = axis_candidates(p.sh, p.ph, p.dh, p.KH, ah), nw = axis_candidates(p.sw, p.pw, p.dw, p.KW, aw);
  if (nh == 0 || nw == 0) return false;
  const AxisCells &h = ah[nh - 1], &w = aw[nw - 1];
  if (h.u < 2 || h.u > 3 || w.u > kMaxU) return false;
  const int64_t np = p.Cout_g * p.sh * p.sw * w.u;
  if (np > kN) return false;
  const int64_t lim = int64_t(1) << 31;
  // The col2im's offsets a group (kStepGo) reach up to sh + 1 rows past its outputs before the row test.
  if (p.Cin_g * p.Hin * p.Win >= lim || p.Cout_g * p.Hout * p.Wout + (p.sh + 1) * p.Wout >= lim) return false;
  const int64_t per_col = p.Cout_g * p.sh * p.sw;  // the col2im's outputs a cell column
  const int64_t sc_max = std::min<int64_t>(kPx - w.u + 1 - (align_px(elem) - 1), kItems * kThreads / per_col);
  if (sc_max < 1) return false;
  const int64_t hc = (p.Hout + h.c + p.sh - 1) / p.sh, wc = (p.Wout + w.c + p.sw - 1) / p.sw;
  const int64_t strips = (wc + sc_max - 1) / sc_max;
  // Strips of even widths: at most sc_max each, a last narrow strip's blocks would idle their share of an SM while
  // the full ones set the time (FSRCNN: 5 strips of 52 cell columns, not 4 of 62 and one of 8).
  const int64_t sc = (wc + strips - 1) / strips;
  if (strips * hc >= lim) return false;
  fill_cells_geom(p, h, w, elem == 2 ? 16 : 8, g);
  g.np = static_cast<int>(np);
  g.sc = static_cast<int>(sc);
  g.strips = static_cast<int>(strips);
  g.items = static_cast<int>(per_col * sc);
  g.m_sc = magic(g.sc);
  g.m_sw = magic(g.sw);
  g.m_sh = magic(g.sh);
  for (int i = 0; i < 3; ++i)
    for (int n = 0; n < kN; ++n) {
      const int per_r = g.sw * g.uw, per_co = g.sh * per_r;
      const int co = n / per_co, rest = n - co * per_co, r = rest / per_r, q = (rest - r * per_r) / g.uw,
                j = rest - r * per_r - q * g.uw;
      const int kh = n < g.np && i < g.uh ? h.tab[r * kAxisMaxU + i] : -1;
      const int kwj = n < g.np ? w.tab[q * kAxisMaxU + j] : -1;
      g.wcol[i][n] = kh >= 0 && kwj >= 0 ? co * g.kk + kh * g.kw + kwj : -1;
    }
  return true;
}

template <typename T>
void launch_typed(const ConvTParams& p, StackGeom g, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                  at::Tensor& out, cudaStream_t stream) {
  if (p.N == 0 || p.groups == 0 || g.hout == 0 || g.wout == 0) return;
  const T* bp = b.defined() ? b.const_data_ptr<T>() : nullptr;
  constexpr int kFullKS = sizeof(T) == 2 ? 4 : 8;  // k-steps of 64 channels
  auto go = [&](auto kernel, int ks, bool tma) {
    const int bytes = kWgs * (kBufFloats * 4 + ks * g.uh * kBlockBytes) +
                      (tma ? kAlign + kRing * (kSlotBytes(ks) + 8) + g.uh * 8 : 0);
    allow_dynamic_smem(kernel, bytes);
    // Segments: as many as fill the blocks that run at once (at least one a strip).
    const int dev = x.get_device();
    g.nsm = sm_count(dev);
    const int64_t resident = int64_t(g.nsm) * std::max(1, blocks_per_sm(kernel, kThreads, bytes, dev));
    const int64_t hc = g.hc, units = p.N * p.groups * g.strips;
    const int64_t want = std::clamp<int64_t>(resident / units, 1, hc);
    const int64_t rseg = (hc + want - 1) / want, segs = (hc + rseg - 1) / rseg;
    g.rseg = static_cast<int>(rseg);
    const dim3 grid(static_cast<unsigned>(segs * g.strips), static_cast<unsigned>(p.N),
                    static_cast<unsigned>(p.groups));
    CUtensorMap xmap{};
    if (tma) {
      // A box: kBoxPx columns of one row of one group's channels, at most 16 KS.
      g.tma_ch = std::min(16 * ks, g.cin_g);
      xmap = input_map(p, x.const_data_ptr(), kBoxPx, 1, cuuint32_t(g.tma_ch), false);
    }
    kernel<<<grid, kThreads, bytes, stream>>>(xmap, p, g, x.const_data_ptr<T>(), w.const_data_ptr<T>(), bp,
                                              out.mutable_data_ptr<T>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  };
  // A warpgroup's k-steps: half of the group's channels, padded to a quarter or a half of 64.
  constexpr int kS = kFullKS / 4, kL = kFullKS / 2;
  const bool short_k = g.ksteps <= 2 * kS;
  // The ring is a template argument (its kernels exist for fp32 alone), so the pick takes it as a type.
  auto pick = [&](auto ring) {
    constexpr bool kRingOn = decltype(ring)::value;
    if (g.uh == 2) {
      if (short_k) go(convt_stack_kernel<T, 2, kS, kRingOn>, kS, kRingOn);
      else go(convt_stack_kernel<T, 2, kL, kRingOn>, kL, kRingOn);
    } else {
      if (short_k) go(convt_stack_kernel<T, 3, kS, kRingOn>, kS, kRingOn);
      else go(convt_stack_kernel<T, 3, kL, kRingOn>, kL, kRingOn);
    }
  };
  if constexpr (sizeof(T) == 4) {
    if (ring_fits(p, x)) return pick(std::true_type{});
  }
  pick(std::false_type{});
}

}  // namespace

int stack_rows(const ConvTParams& p, const at::Tensor& x, bool tf32) {
  const at::ScalarType dt = x.scalar_type();
  if (dt != at::kHalf && dt != at::kBFloat16 && !(dt == at::kFloat && tf32)) return 0;
  if (p.groups > 65535 || p.N > 65535) return 0;  // grid.z, grid.y
  StackGeom g;
  return geometry(p, static_cast<int>(x.element_size()), g) && wg_available(x.get_device()) ? g.uh : 0;
}

bool stack_supports(const ConvTParams& p, const at::Tensor& x, bool tf32) { return stack_rows(p, x, tf32) > 0; }

bool stack_ring(const ConvTParams& p, const at::Tensor& x, bool tf32) {
  return stack_rows(p, x, tf32) > 0 && ring_fits(p, x);
}

void launch_stack(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                  cudaStream_t stream) {
  StackGeom g;
  CONVT_CHECK(geometry(p, static_cast<int>(x.element_size()), g), "convt: the stack kernel does not take this shape");
  switch (x.scalar_type()) {
    case at::kFloat: launch_typed<float>(p, g, x, w, b, out, stream); break;
    case at::kHalf: launch_typed<at::Half>(p, g, x, w, b, out, stream); break;
    case at::kBFloat16: launch_typed<at::BFloat16>(p, g, x, w, b, out, stream); break;
    default: TORCH_CHECK(false, "convt: the stack kernel takes float32 (as TF32), float16 and bfloat16");
  }
}

}  // namespace convt
