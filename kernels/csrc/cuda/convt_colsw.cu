// The columns path's shuffle on wgmma (see convt_colsw.h). A block of four warpgroups, one an SM, owns one group's
// tile of 128 columns (output channel, kernel row, kernel column), kernel column fastest, and walks the pixel tiles
// j, j + P, .. of that group: each tile is 256 pixels (64 a warpgroup) of the flattened batch. The block stages its
// columns' weights once, K-major in 8-row core matrices (wgmma's B by descriptor; TF32 B must be K-major, and the
// weights lie column-major in K); one block an SM gathers them once an SM, not twice (session 51: 42 -> 39 us TF32
// on unet-128-64-n1). Each warpgroup then streams [channel][pixel] slabs of its own 64 pixels of the NCHW input by
// cp.async into two buffers, a chunk of 32 channels (TF32) or 64 (half types) at a time, across tile boundaries, so
// a tile's stores run under the next tile's first copies; the warpgroups wait only on their own copies (a named
// barrier each), so none waits on another's stores. A thread's A fragment comes from a slab with plain loads (TF32,
// rounded) or ldmatrix.trans (half types), at a pitch that puts a warp's reads in distinct banks. Where the kernel
// width is even, an accumulator pair is two adjacent outputs of one row: one store, 8 lanes covering consecutive
// pixels' pairs; where the kernel is 2x2 and the input width a multiple of 64, a warpgroup's tile is staged in shared
// memory as whole output rows and written as full 128-byte lines.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "convt_cols.h"
#include "convt_colsw.h"
#include "convt_tc.h"
#include "smem_attr.h"
#include "wgmma_ops.h"

namespace convt {
namespace {

#include "cp_async.cuh"
#include "fast_div.cuh"
#include "mma_sync.cuh"
#include "store_pair.cuh"
#include "wg_ptx.cuh"

constexpr int kThreads = 512;
constexpr int kBM = 256, kBN = 128;  // pixels (64 a warpgroup) x columns a tile
constexpr int kPA = kBM + 8;         // a slab row's pitch in elements: 8 words (TF32) or 16 bytes past 32 words
// One k-step of B: two core-matrix columns (kStepBytes / 2 apart) of kBN / 8 core matrices kSBO bytes apart, each 8
// rows of 16 bytes. kSBO is 144, not 128, so that eight threads storing the same row of eight core matrices at once
// (the gather below) fall in distinct banks.
constexpr int kSBO = 144;
constexpr int kStepBytes = 2 * (kBN / 8) * kSBO;
constexpr int kMaxSteps = 16;  // 128 channels a group in TF32, 256 in half types
constexpr int kWeightBytes = kMaxSteps * kStepBytes;

template <typename T>
struct Cfg {
  static constexpr bool kHalf = sizeof(T) == 2;
  static constexpr int kK = kHalf ? 16 : 8;       // k a wgmma
  static constexpr int kBK = kHalf ? 64 : 32;     // channels a chunk (128 bytes of a pixel's k)
  static constexpr int kSteps = kBK / kK;         // 4
  static constexpr int kV = 16 / static_cast<int>(sizeof(T));  // elements a 16-byte copy
  static constexpr int kCopies = kBK * (64 / kV) / 128;  // a thread's 16-byte copies a chunk (its warpgroup's)
  static constexpr int kSlabElems = kBK * kPA;
  // The staged stores' buffer, a warpgroup's: 64 output rows of 128 (TF32 in two passes of 32 rows), at a pitch 32
  // bytes past the row, so that a pair store's four rows fall 8 banks apart.
  static constexpr int kPasses = kHalf ? 1 : 2, kStagePitch = 128 + 32 / static_cast<int>(sizeof(T));
  static constexpr int kStageElems = 64 / kPasses * kStagePitch;
  static constexpr int kSmemBytes =
      kWeightBytes + kBN / 2 * 16 + (2 * kSlabElems + 4 * kStageElems) * static_cast<int>(sizeof(T));
  static_assert(kCopies * 128 == kBK * (64 / kV) && 128 % (64 / kV) == 0);
};

struct ColswGeom {
  int hw, win, hout, wout, kh, kw, kk, cin_g, cout_g, nc, m_total, m_tiles, n_tiles, per;  // per: blocks a column tile
  int nchunks;
  FastDiv by_hw, by_win;
};

// The epilogue's table: a column pair's output offsets (elements, within an image's planes of the group) and bias.
struct ColPair {
  uint32_t off0;
  float b0, b1;
  uint32_t off1;
};

template <typename T>
__global__ void __launch_bounds__(kThreads, 1)
    convt_colsw_kernel(const ConvTParams p, const ColswGeom sg, const T* __restrict__ x, const T* __restrict__ w,
                       const T* __restrict__ bias, T* __restrict__ y, bool pair, bool rows) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = Cfg<T>;
  using Op = typename wg::OpFor<T>::type;
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* wsm = smem;
  ColPair* cols = reinterpret_cast<ColPair*>(smem + kWeightBytes);
  T* slabs = reinterpret_cast<T*>(cols + kBN / 2);
  T* stage = slabs + 2 * C::kSlabElems;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wgi = warp >> 2, wq = warp & 3;

  const int tiles_g = sg.n_tiles * sg.per;  // blocks a group
  const int grp = blockIdx.x / tiles_g, rest = blockIdx.x - grp * tiles_g;
  const int nt = rest % sg.n_tiles, j0 = rest / sg.n_tiles;
  const int n0 = nt * kBN;
  const int my_tiles = j0 < sg.m_tiles ? (sg.m_tiles - 1 - j0) / sg.per + 1 : 0;
  const T* xg = x + int64_t(grp) * sg.cin_g * sg.hw;
  const int64_t img_in = int64_t(p.Cin) * sg.hw;

  // The copies run a chunk ahead of the products, each from a cursor advanced by additions (the divisions of a
  // chunk's tile and image cost more instructions than its copies): chunk (ct, ck) of the block's tiles, the
  // thread's 16-byte pixel piece pc (of its warpgroup's 64) of channel rows kr, kr + kRowStep, ...
  constexpr int kPieces = 64 / C::kV, kRowStep = 128 / kPieces;
  const int pc = wgi * 64 + (tid & 127) % kPieces * C::kV, kr = (tid & 127) / kPieces;
  const int64_t row_step = int64_t(kRowStep) * sg.hw, chunk_step = int64_t(C::kBK) * sg.hw;
  int ct = 0, ck = 0, cbuf = 0;
  const T* src = nullptr;
  bool m_ok = false;
  auto tile_src = [&] {
    const int m = (j0 + ct * sg.per) * kBM + pc, img = static_cast<int>(sg.by_hw.div(m));
    m_ok = m < sg.m_total;
    src = xg + img * img_in + (m - img * sg.hw) + int64_t(kr) * sg.hw;
  };
  auto issue = [&] {
    T* dst = slabs + cbuf * C::kSlabElems + kr * kPA + pc;
    const int left = sg.cin_g - ck * C::kBK - kr;  // channel rows of the group left from the thread's first
#pragma unroll
    for (int i = 0; i < C::kCopies; ++i) {
      const bool ok = m_ok && i * kRowStep < left;
      cp_async16_zfill(dst + i * kRowStep * kPA, ok ? src + i * row_step : x, ok);
    }
    cp_async_commit();
    cbuf ^= 1;
    src += chunk_step;
    if (++ck == sg.nchunks) {
      ck = 0;
      ++ct;
      if (ct < my_tiles) tile_src();
    }
  };
  if (my_tiles > 0) {
    tile_src();
    issue();
  }

  // The weights: column n, channel k at byte (k / kK) kStepBytes + (k % kK / (kK / 2)) (kStepBytes / 2) + (n / 8) kSBO
  // + (n % 8) 16 + (k % (kK / 2)) elem, each 16-byte core row the E = kV channels of one column. A thread loads an
  // E x E block (E channels of E adjacent columns: E 16-byte loads, rows of the weight as they lie; colsw_supports
  // asks 16-byte weight rows), transposes it in registers and stores E core rows; consecutive threads take
  // consecutive column groups, so the loads coalesce and eight threads' stores of one row index fall kSBO apart, in
  // distinct banks. Session 52: 1.0-1.5 us (fp16) and 1.6-2.1 us (TF32) under a gather of one element a load.
  {
    constexpr int kE = C::kV, kNB = kBN / kE;
    const int kpad = sg.nchunks * C::kBK, nblk = kpad / kE * kNB;
    const T* wg0 = w + int64_t(grp) * sg.cin_g * sg.nc;
    auto load_blk = [&](int e, uint4 (&r)[kE]) {
      const int k0 = e / kNB * kE, n = n0 + e % kNB * kE;
#pragma unroll
      for (int i = 0; i < kE; ++i) {
        const bool ok = e < nblk && n < sg.nc && k0 + i < sg.cin_g;  // nc is a multiple of E: a block in or out
        r[i] = ok ? __ldg(reinterpret_cast<const uint4*>(wg0 + int64_t(k0 + i) * sg.nc + n)) : make_uint4(0, 0, 0, 0);
      }
    };
    auto word = [](const uint4& q, int i) { return i == 0 ? q.x : i == 1 ? q.y : i == 2 ? q.z : q.w; };
    auto store_blk = [&](int e, const uint4 (&r)[kE]) {
      const int k0 = e / kNB * kE, ng = e % kNB;
      unsigned char* base = wsm + k0 / C::kK * kStepBytes + (k0 % C::kK) / kE * (kStepBytes / 2);
#pragma unroll
      for (int c = 0; c < kE; ++c) {
        const int n = ng * kE + c;
        uint4 q4;
        if constexpr (C::kHalf) {  // column c's halves of each channel pair's words
          const uint32_t sel = (c & 1) ? 0x7632u : 0x5410u;
          q4 = make_uint4(__byte_perm(word(r[0], c / 2), word(r[1], c / 2), sel),
                          __byte_perm(word(r[2], c / 2), word(r[3], c / 2), sel),
                          __byte_perm(word(r[4], c / 2), word(r[5], c / 2), sel),
                          __byte_perm(word(r[6], c / 2), word(r[7], c / 2), sel));
        } else {
          q4 = make_uint4(tf32_bits_of(__uint_as_float(word(r[0], c))), tf32_bits_of(__uint_as_float(word(r[1], c))),
                          tf32_bits_of(__uint_as_float(word(r[2], c))), tf32_bits_of(__uint_as_float(word(r[3], c))));
        }
        *reinterpret_cast<uint4*>(base + (n >> 3) * kSBO + (n & 7) * 16) = q4;
      }
    };
    constexpr int kU = C::kHalf ? 1 : 2;  // blocks a batch, all loads issued before any is used: 8 loads in flight
    for (int e0 = tid; e0 < nblk; e0 += kU * kThreads) {
      uint4 r[kU][kE];
#pragma unroll
      for (int u = 0; u < kU; ++u) load_blk(e0 + u * kThreads, r[u]);
#pragma unroll
      for (int u = 0; u < kU; ++u)
        if (e0 + u * kThreads < nblk) store_blk(e0 + u * kThreads, r[u]);
    }
    // The column pairs' output offsets (within the group's output planes of one image) and bias.
    auto off = [&](int c) {
      const int co = c / sg.kk, r = c - co * sg.kk, a = r / sg.kw, b = r - a * sg.kw;
      return c < sg.nc ? uint32_t((co * sg.hout + a) * sg.wout + b) : 0u;
    };
    auto bias_of = [&](int c) {
      return c < sg.nc && bias != nullptr ? static_cast<float>(bias[int64_t(grp) * sg.cout_g + c / sg.kk]) : 0.f;
    };
    for (int i = tid; i < kBN / 2; i += kThreads) {
      const int c = n0 + 2 * i;
      cols[i] = ColPair{off(c), bias_of(c), bias_of(c + 1), off(c + 1)};
    }
  }
  fence_async_smem();  // the weights, written by this proxy, are read by wgmma's
  __syncthreads();     // every warpgroup's weights and column pairs, before any warpgroup's products or stores

  const uint32_t wlo = desc_lo(smem_addr(wsm), kStepBytes / 2);
  const int g8 = lane >> 2, t4 = lane & 3;
  const int64_t img_out = int64_t(p.Cout) * sg.hout * sg.wout;
  T* yg = y + int64_t(grp) * sg.cout_g * sg.hout * sg.wout;
  const int px = wgi * 64 + wq * 16;
  // Accumulator d[4 j + e]: pixel 16 wq + g (+ 8 for e >= 2) of the warpgroup's 64, column 8 j + 2 t + (e & 1).
  float acc[64];
#pragma unroll
  for (int e = 0; e < 64; ++e) acc[e] = 0.f;
  // Where the kernel is 2x2 and a warpgroup's 64 pixels lie in one input row (rows: the width a multiple of 64, a
  // 16-byte aligned output), a column pair (output channel, kernel row) of its tile is 128 adjacent outputs of one
  // output row: the tile is staged in shared memory as those rows and written as whole 128-byte lines. Session 52:
  // fp16 unet-128-64-n1 25.6 -> 24.5 us, 8 x 128 -> 256 channels at 64 x 64 67.1 -> 60.1 (TF32 38.7 -> 39.5 and
  // 110.9 -> 106.7).
  auto store_rows = [&](int t) {
    constexpr int kRows = 64 / C::kPasses, kPieces = 128 / C::kV, kPitch = C::kStagePitch;
    T* st = stage + wgi * C::kStageElems;
    const int m0 = (j0 + t * sg.per) * kBM + wgi * 64;
    const bool ok = m0 < sg.m_total;  // the warpgroup's 64 pixels, all or none (hw is a multiple of 64)
    const int img = static_cast<int>(sg.by_hw.div(m0)), r = m0 - img * sg.hw;
    const int ih = static_cast<int>(sg.by_win.div(r)), iw0 = r - ih * sg.win;
    T* yi = yg + img * img_out;
    const uint32_t po = uint32_t(ih * 2 * sg.wout + iw0 * 2);
    const int pl = wq * 16 + g8;
#pragma unroll
    for (int pass = 0; pass < C::kPasses; ++pass) {
      // The last pass's (or tile's: a chunk barrier lies between) reads of the stage are done.
      if (pass > 0) asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wgi) : "memory");
#pragma unroll
      for (int jj = 0; jj < 16 / C::kPasses; ++jj) {
        const int j = pass * (16 / C::kPasses) + jj, n = 8 * j + 2 * t4;
        const ColPair cp = cols[n / 2];
#pragma unroll
        for (int h = 0; h < 2; ++h)
          store2(st + (4 * jj + t4) * kPitch + 2 * (pl + 8 * h), acc[4 * j + 2 * h] + cp.b0,
                 acc[4 * j + 2 * h + 1] + cp.b1);
      }
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wgi) : "memory");
#pragma unroll
      for (int i = 0; i < kRows * kPieces / 128; ++i) {
        const int idx = i * 128 + (tid & 127), rr = idx / kPieces, c = idx % kPieces;
        const uint4 v = *reinterpret_cast<const uint4*>(st + rr * kPitch + c * C::kV);
        if (ok) *reinterpret_cast<uint4*>(yi + (po + cols[pass * kRows + rr].off0 + c * C::kV)) = v;
      }
    }
  };
  auto store_tile = [&](int t, auto full) {
    const int mt = j0 + t * sg.per;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = mt * kBM + px + g8 + 8 * h;
      if (m < sg.m_total) {
        const int img = static_cast<int>(sg.by_hw.div(m)), r = m - img * sg.hw;
        const int ih = static_cast<int>(sg.by_win.div(r)), iw = r - ih * sg.win;
        // The image's planes of the group once, then a 32-bit index a store (< 2^30: colsw_supports)
        T* yi = yg + img * img_out;
        const uint32_t po = uint32_t(ih * sg.kh * sg.wout + iw * sg.kw);
#pragma unroll
        for (int j = 0; j < kBN / 8; ++j) {
          const int n = 8 * j + 2 * t4;
          const ColPair cp = cols[n / 2];
          const float v0 = acc[4 * j + 2 * h] + cp.b0, v1 = acc[4 * j + 2 * h + 1] + cp.b1;
          if constexpr (decltype(full)::value) {
            store2(yi + (po + cp.off0), v0, v1);
          } else if (n0 + n < sg.nc) {
            if (pair) {
              store2(yi + (po + cp.off0), v0, v1);
            } else {
              yi[po + cp.off0] = static_cast<T>(v0);
              if (n0 + n + 1 < sg.nc) yi[po + cp.off1] = static_cast<T>(v1);
            }
          }
        }
      }
    }
  };
  const bool fast = pair && n0 + kBN <= sg.nc;  // whole column tile, adjacent pairs: one store a pair, no checks
  int buf = 0;
  for (int t = 0; t < my_tiles; ++t) {
    for (int kc = 0; kc < sg.nchunks; ++kc) {
      cp_async_wait<0>();
      // The warpgroup's share of this chunk has landed, and its four warps are past the last chunk, whose buffer
      // the next takes: a named barrier a warpgroup (each copies and reads only its own 64 pixels).
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wgi) : "memory");
      if (ct < my_tiles) issue();
      const T* slab = slabs + buf * C::kSlabElems;
      buf ^= 1;
      uint32_t a[C::kSteps][4];
#pragma unroll
      for (int s = 0; s < C::kSteps; ++s) {
        if constexpr (C::kHalf) {
          const int li = lane >> 3, r = lane & 7;
          ldmatrix_x4_trans(a[s], slab + (s * 16 + (li >> 1) * 8 + r) * kPA + px + (li & 1) * 8);
        } else {
          // m16n8k8's A: a0 (pixel g, k t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4)
          const float* sp = reinterpret_cast<const float*>(slab) + (s * 8 + t4) * kPA + px + g8;
          a[s][0] = tf32_bits_of(sp[0]);
          a[s][1] = tf32_bits_of(sp[8]);
          a[s][2] = tf32_bits_of(sp[4 * kPA]);
          a[s][3] = tf32_bits_of(sp[4 * kPA + 8]);
        }
      }
      wgmma_fence();
#pragma unroll
      for (int s = 0; s < C::kSteps; ++s) {
        const int ks = kc * C::kSteps + s;
        wg::WgmmaRs<Op, kBN>::run(acc, a[s], desc_words(kSBO >> 4, wlo + uint32_t((ks * kStepBytes) >> 4)),
                                  kc > 0 || s > 0 ? 1 : 0);
      }
      wgmma_commit();
      wgmma_wait<0>();
    }
    fence_regs(acc);
    if (fast && rows) store_rows(t);
    else if (fast) store_tile(t, std::true_type{});
    else store_tile(t, std::false_type{});
  }
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
}

template <typename T>
void launch_typed(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                  at::Tensor& out, cudaStream_t stream) {
  using C = Cfg<T>;
  ColswGeom sg;
  sg.hw = static_cast<int>(p.Hin * p.Win);
  sg.win = static_cast<int>(p.Win);
  sg.hout = static_cast<int>(p.Hout);
  sg.wout = static_cast<int>(p.Wout);
  sg.kh = static_cast<int>(p.KH);
  sg.kw = static_cast<int>(p.KW);
  sg.kk = sg.kh * sg.kw;
  sg.cin_g = static_cast<int>(p.Cin_g);
  sg.cout_g = static_cast<int>(p.Cout_g);
  sg.nc = sg.cout_g * sg.kk;
  sg.m_total = static_cast<int>(p.N * p.Hin * p.Win);
  sg.m_tiles = (sg.m_total + kBM - 1) / kBM;
  sg.n_tiles = (sg.nc + kBN - 1) / kBN;
  sg.nchunks = (sg.cin_g + C::kBK - 1) / C::kBK;
  sg.by_hw = FastDiv(static_cast<uint32_t>(sg.hw));
  sg.by_win = FastDiv(static_cast<uint32_t>(sg.win));
  if (sg.m_tiles == 0 || sg.n_tiles == 0 || p.groups == 0) return;
  // make_params refuses a weight of no input channels, so every group has a chunk: the first copy group, issued
  // before the chunk loop, is always waited on.
  TORCH_INTERNAL_ASSERT(sg.nchunks > 0);
  // One block an SM, spread over the (group, column tile) pairs; each walks the pixel tiles its index picks.
  const int64_t pairs = p.groups * int64_t(sg.n_tiles);
  const int64_t slots = sm_count(x.get_device());
  sg.per = static_cast<int>(std::min<int64_t>(sg.m_tiles, std::max<int64_t>(1, (slots + pairs - 1) / pairs)));
  const int64_t blocks = pairs * sg.per;
  T* y = out.mutable_data_ptr<T>();
  const bool pair = p.KW % 2 == 0 && reinterpret_cast<uintptr_t>(y) % (2 * sizeof(T)) == 0;
  const bool rows = p.KH == 2 && p.KW == 2 && p.Win % 64 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
  auto kernel = convt_colsw_kernel<T>;
  allow_dynamic_smem(kernel, C::kSmemBytes);
  kernel<<<static_cast<unsigned>(blocks), kThreads, C::kSmemBytes, stream>>>(
      p, sg, x.const_data_ptr<T>(), w.const_data_ptr<T>(), b.defined() ? b.const_data_ptr<T>() : nullptr, y, pair, rows);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

bool colsw_supports(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, bool tf32) {
  const at::ScalarType dt = x.scalar_type();
  if (!cols_shuffle(p) || !((dt == at::kFloat && tf32) || dt == at::kHalf || dt == at::kBFloat16)) return false;
  const int64_t elem = x.element_size(), vec = 16 / elem, max_k = kMaxSteps * (elem == 2 ? 16 : 8);
  const int64_t hw = p.Hin * p.Win, lim = int64_t(1) << 30;
  if (p.Cin_g > max_k || hw % vec != 0 || p.N * hw >= lim || p.Cin * hw >= lim) return false;
  if (p.Cout_g * p.Hout * p.Wout >= lim || p.Cout * p.Hout * p.Wout >= (int64_t(1) << 31)) return false;
  if (reinterpret_cast<uintptr_t>(x.const_data_ptr()) % 16 != 0) return false;
  // The weights by 16-byte loads: 16-byte rows (nc elements) from a 16-byte aligned start.
  if (p.Cout_g * p.KH * p.KW % vec != 0 || reinterpret_cast<uintptr_t>(w.const_data_ptr()) % 16 != 0) return false;
  return wg_available(x.get_device());
}

void launch_colsw(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                  cudaStream_t stream) {
  switch (x.scalar_type()) {
    case at::kFloat: launch_typed<float>(p, x, w, b, out, stream); break;
    case at::kHalf: launch_typed<at::Half>(p, x, w, b, out, stream); break;
    case at::kBFloat16: launch_typed<at::BFloat16>(p, x, w, b, out, stream); break;
    default: TORCH_CHECK(false, "convt: the wgmma shuffle takes float32 (as TF32), float16 and bfloat16");
  }
}

}  // namespace convt
