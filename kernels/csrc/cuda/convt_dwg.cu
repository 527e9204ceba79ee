// The dense path on wgmma (see convt_dwg.h). The dense kernel (convt_dense.cu) is latency-bound on mma.sync: a
// scheduler's four warps each wait out a chain of ~16 dependent mma a tap (kernel-notes v15). wgmma queues a
// warpgroup's products asynchronously, so here a warpgroup issues one step's wgmma and, while they run, loads the
// next step's A fragments.
//
// A block is G warpgroups x MS output rows x 64 columns of one image and group, and 64 output channels. Staging is
// the dense kernel's: per chunk of input channels (8 fp32 or 16 half ones: one wgmma k-step), 16-byte cp.async
// brings the NCHW input halo and the chunk's packed weights into a ring of stages; half types interleave channel
// pairs into words once a chunk. wgmma's A (64 pixels x k) is the halo moved by a tap: warp q of a warpgroup loads
// pixels 16q.. as mma.sync's A fragment, four 32-bit loads at any alignment. Its B is the chunk's weights for one
// tap, K-major in the unswizzled canonical layout (8 x 16-byte core matrices), by descriptor.
//
// A warpgroup's rows share halo rows: row j takes tap row kh from halo row j + (KH - 1 - kh) dh, so one step loads
// the fragment of one halo row and tap column and issues a wgmma for every row of the warpgroup that reads it
// (MS = 2, 3 tap rows: 4 loads for 6 products).
//
// Ordering. A step's A registers are written only while the previous step's wgmma (the other register set) may be
// in flight: each step commits its group, then waits for all but it. The weights are read asynchronously, so a
// stage is refilled two chunks after its own (the ring is 3 or 4 stages, loads run 1 or 2 chunks ahead), and
// cp.async's writes are made visible to wgmma's async proxy by fence.proxy.async before the barrier.
#include "convt_dwg.h"

#include <c10/cuda/CUDAException.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "convt_tc.h"
#include "wgmma_ops.h"

namespace convt {
namespace {

#include "cp_async.cuh"
#include "mma_sync.cuh"
#include "store_pair.cuh"
#include "wg_ptx.cuh"

constexpr int kCols = 64;  // columns a block: one m64 slice a row
constexpr int kBN = 64;    // output channels a block: wgmma's N
constexpr int kMaxSteps = 64;  // halo rows a warpgroup's taps may read (its step schedule)

struct DwgGeom {
  int n, hin, win, hout, wout;
  int kh, kw, ph, pw, dh, dw;
  int cin, cout, cin_g, cout_g;
  int hr, rp, rpv;  // halo rows, row pitch in pixels (whole 16-byte copies), copies a row
  int cp;           // channel pitch of the halo the A loads read, in words: 8 past a multiple of 32
  int cpr;          // channel pitch of the staged halo, in elements (fp32: cp; half types: hr * rp)
  int halo_words;   // a stage's halo, then its weights
  int w_slab;       // packed weight words a (group, channel tile, chunk): taps x 64 channels x 8 k-words
  int stage_words;
  int stages;      // 3 or 4; loads run stages - 2 chunks ahead
  int table_word;  // where the copy table starts (after the stages and, for half types, the interleaved halo)
  int smem_bytes;
  int chunks, co_tiles, th_tiles, tw_tiles;
  int64_t hw_in;
  // A warpgroup's steps a chunk, worked out on the host (no division in the main loop): step s loads halo row
  // step_u[s] (relative to the warpgroup's first row) and row j takes tap row byte j of step_kh[s] (0xff: none).
  int steps;
  uint8_t step_u[kMaxSteps];
  uint32_t step_kh[kMaxSteps];
};

template <typename T>
struct Chunk {
  static constexpr bool kHalf = sizeof(T) == 2;
  static constexpr int kCh = kHalf ? 16 : 8;                   // input channels a chunk: one wgmma k-step, 8 words
  static constexpr int kV = 16 / static_cast<int>(sizeof(T));  // elements a 16-byte copy
};

template <typename T>
struct WgOp;
template <>
struct WgOp<float> {
  using type = wg::Tf32;
};
template <>
struct WgOp<at::Half> {
  using type = wg::F16;
};
template <>
struct WgOp<at::BFloat16> {
  using type = wg::Bf16;
};

// Packed weights, one slab a (group, channel tile, chunk): [tap][n / 8][n % 8][32-byte k row], wgmma's K-major
// layout with 32-byte swizzle: rows 4-7 of each 256-byte atom of 8 rows hold their two 16-byte k halves swapped, so
// the 8 rows' same half falls in 32 distinct banks (unswizzled, the n-adjacent core matrices sit 256 bytes apart in
// the same 4 banks). Atoms along n are 256 bytes apart (the descriptor's stride offset). fp32 words are
// TF32-rounded; half types hold k pairs, the lower k in the low half.
template <typename T>
__global__ void dwg_pack_kernel(const DwgGeom d, const T* __restrict__ w, uint32_t* __restrict__ wp, int64_t words) {
  constexpr int KC = Chunk<T>::kCh;
  const int kk = d.kh * d.kw;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < words; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = i;
    const int e = static_cast<int>(r % 4);
    r /= 4;
    const int half = static_cast<int>(r % 2);
    r /= 2;
    const int row = static_cast<int>(r % 8);
    r /= 8;
    const int kcore = half ^ (row >> 2);
    const int ncore = static_cast<int>(r % (kBN / 8));
    r /= kBN / 8;
    const int tap = static_cast<int>(r % kk);
    r /= kk;
    const int kc = static_cast<int>(r % d.chunks);
    r /= d.chunks;
    const int cot = static_cast<int>(r % d.co_tiles);
    const int64_t g = r / d.co_tiles;
    const int co = cot * kBN + ncore * 8 + row, kword = kcore * 4 + e;
    auto weight = [&](int ci) -> T {
      return ci < d.cin_g && co < d.cout_g ? w[((g * d.cin_g + ci) * d.cout_g + co) * kk + tap] : T(0);
    };
    if constexpr (Chunk<T>::kHalf) {
      const int ci = kc * KC + 2 * kword;
      const T lo = weight(ci), hi = weight(ci + 1);
      wp[i] = uint32_t(reinterpret_cast<const uint16_t&>(lo)) | (uint32_t(reinterpret_cast<const uint16_t&>(hi)) << 16);
    } else {
      wp[i] = tf32_round(weight(kc * KC + kword));
    }
  }
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// B's descriptor: 32-byte swizzle (mode 3), 8-row atoms 256 bytes apart; the leading offset is unused. p is
// 256-byte aligned, as the swizzle pattern is one of address bits.
__device__ __forceinline__ uint64_t weights_desc(const void* p) {
  return ((uint64_t(smem_addr(p)) & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(256 >> 4) << 32) |
         (uint64_t(3) << 62);
}
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// A shared-memory word by its 32-bit address: the halo pointer changes with the chunk, and through it the compiler
// had lost the address space and issued generic 64-bit loads.
__device__ __forceinline__ uint32_t lds32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}
__device__ __forceinline__ uint2 lds64(uint32_t addr) {
  uint2 v;
  asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(addr));
  return v;
}
#endif

template <typename T, int MS, int G, int KWM>
__global__ void __launch_bounds__(G * 128, 1)
    convt_dwg_kernel(const DwgGeom d, const T* __restrict__ x, const uint32_t* __restrict__ wp,
                     const T* __restrict__ bias, T* __restrict__ y, bool pair) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int NTH = G * 128, CH = Chunk<T>::kCh, V = Chunk<T>::kV;
  using Op = typename WgOp<T>::type;
  extern __shared__ __align__(16) uint32_t smem_raw[];
  uint32_t* smem = reinterpret_cast<uint32_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 255) & ~uintptr_t(255));
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wgi = warp >> 2, wq = warp & 3, gq = lane >> 2, tq = lane & 3;

  // Channel tiles fastest: the blocks that read one halo run together and share it through L2.
  unsigned blk = blockIdx.x;  // < 2^31 (dwg_supports)
  const int cot = static_cast<int>(blk % d.co_tiles);
  blk /= d.co_tiles;
  const int twi = static_cast<int>(blk % d.tw_tiles);
  blk /= d.tw_tiles;
  const int thi = static_cast<int>(blk % d.th_tiles);
  blk /= d.th_tiles;
  const int img = static_cast<int>(blk % d.n);
  const int g = static_cast<int>(blk / d.n);
  const int oh0 = thi * G * MS, ow0 = twi * kCols;
  const int ih0 = oh0 + d.ph - (d.kh - 1) * d.dh, c0 = ow0 + d.pw - (d.kw - 1) * d.dw;
  const int ca = c0 >= 0 ? c0 / V * V : -((V - 1 - c0) / V) * V;  // floor to a copy boundary
  const int shift = c0 - ca;

  // The halo's copies, the same for every channel and chunk: source offset in the input plane, or -1 for a
  // zero-filled copy (outside the image).
  const int plane = d.hr * d.rpv;
  int* src_tab = reinterpret_cast<int*>(smem + d.table_word);
  for (int j = tid; j < plane; j += NTH) {
    const int row = j / d.rpv, col = j - row * d.rpv;
    const int ih = ih0 + row, iw = ca + col * V;
    src_tab[j] = ih >= 0 && ih < d.hin && iw >= 0 && iw < d.win ? ih * d.win + iw : -1;
  }
  __syncthreads();
  const uint32_t tab_s = smem_addr(src_tab);
  const T* x_img = x + (int64_t(img) * d.cin + int64_t(g) * d.cin_g) * d.hw_in;
  const uint32_t* w_blk = wp + (int64_t(g) * d.co_tiles + cot) * d.chunks * int64_t(d.w_slab);
  auto load_stage = [&](int kc, int buf) {
    uint32_t* st = smem + buf * d.stage_words;
    T* halo = reinterpret_cast<T*>(st);
    constexpr int TPC = NTH / CH;  // threads a channel
    const int ch = tid / TPC, ci = kc * CH + ch;
    const T* src = x_img + int64_t(ci < d.cin_g ? ci : 0) * d.hw_in;
    for (int j = tid - ch * TPC; j < plane; j += TPC) {
      const int off = static_cast<int>(lds32(tab_s + 4u * j));
      const bool ok = ci < d.cin_g && off >= 0;
      cp_async16_zfill(halo + ch * d.cpr + j * V, ok ? src + off : x, ok);
    }
    const uint32_t* wsrc = w_blk + int64_t(kc) * d.w_slab;
    uint32_t* wdst = st + d.halo_words;
    for (int c = tid * 4; c < d.w_slab; c += NTH * 4) cp_async16_zfill(wdst + c, wsrc + c, true);
  };

  float acc[MS][kBN / 2];
  zero_acc(acc);

  const int ahead = d.stages - 2;
  for (int s = 0; s < ahead; ++s) {
    if (s < d.chunks) load_stage(s, s);
    cp_async_commit();
  }
  // This lane's A word: k-word tq, pixel 16 wq + gq of the warpgroup's first row, moved by the halo's shift.
  const int a_lane = tq * d.cp + wgi * MS * d.rp + shift + wq * 16 + gq;
  int kc = 0, si = 0;  // the next step: chunk, schedule entry
  uint32_t words = 0;  // shared address of the chunk's A halo
  uint64_t wdesc = 0;
  auto begin_chunk = [&]() {
    if (ahead == 2) {
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    fence_proxy_async();  // this thread's cp.async writes, seen by wgmma's reads of the weights
    __syncthreads();      // chunk kc is in; every warpgroup has retired its wgmma of chunk kc - 2, whose stage is next
    const int nx = kc + ahead;
    if (nx < d.chunks) load_stage(nx, nx % d.stages);
    cp_async_commit();
    const uint32_t* st = smem + (kc % d.stages) * d.stage_words;
    words = smem_addr(st);
    wdesc = weights_desc(st + d.halo_words);
    if constexpr (Chunk<T>::kHalf) {
      // Channel pairs into words: word (c2, pixel) = (channel 2 c2, channel 2 c2 + 1), four pixels a thread a step.
      uint32_t* wb = smem + d.stages * d.stage_words;
      constexpr int TPP = NTH / 8;  // threads a channel pair
      const int quads = d.hr * d.rp / 4, c2 = tid / TPP;
      const uint32_t ev = words + 2u * static_cast<uint32_t>(2 * c2 * d.cpr), od = ev + 2u * d.cpr;
      for (int q = tid - c2 * TPP; q < quads; q += TPP) {
        const uint2 e = lds64(ev + 8u * q), o = lds64(od + 8u * q);
        reinterpret_cast<uint4*>(wb + c2 * d.cp)[q] =
            make_uint4(__byte_perm(e.x, o.x, 0x5410), __byte_perm(e.x, o.x, 0x7632), __byte_perm(e.y, o.y, 0x5410),
                       __byte_perm(e.y, o.y, 0x7632));
      }
      __syncthreads();
      words = smem_addr(wb);
    }
  };
  // One step into register set a: a halo row's fragments for every tap column, and each row's wgmma that reads them;
  // false once every chunk is done.
  auto step = [&](uint32_t(&a)[KWM][4]) -> bool {
    if (kc >= d.chunks) return false;
    if (si == 0) begin_chunk();
    const uint32_t ap = words + 4u * static_cast<uint32_t>(a_lane + d.step_u[si] * d.rp + (d.kw - 1) * d.dw);
    const uint32_t khs = d.step_kh[si];
    const uint32_t dwb = 4u * d.dw, cpb = 16u * d.cp;
#pragma unroll
    for (int t = 0; t < KWM; ++t) {
      if (t < d.kw) {
        const uint32_t at = ap - t * dwb;
        a[t][0] = lds32(at);
        a[t][1] = lds32(at + 32);
        a[t][2] = lds32(at + cpb);
        a[t][3] = lds32(at + cpb + 32);
        if constexpr (std::is_same_v<T, float>) {
#pragma unroll
          for (int e = 0; e < 4; ++e) a[t][e] = tf32_round(__uint_as_float(a[t][e]));
        }
      }
    }
    wgmma_fence();
#pragma unroll
    for (int t = 0; t < KWM; ++t) {
      if (t < d.kw) {
#pragma unroll
        for (int j = 0; j < MS; ++j) {
          const int kh = (khs >> (8 * j)) & 0xff;
          if (kh != 0xff) wg::WgmmaRs<Op, kBN>::run(acc[j], a[t], wdesc + uint64_t((kh * d.kw + t) * (kBN * 2)), 1);
        }
      }
    }
    wgmma_commit();
    wgmma_wait<1>();
    if (++si == d.steps) {
      si = 0;
      ++kc;
    }
    return true;
  };
  uint32_t a0[KWM][4], a1[KWM][4];
  while (step(a0) && step(a1)) {
  }
  wgmma_wait<0>();
#pragma unroll
  for (int j = 0; j < MS; ++j) fence_regs(acc[j]);
  cp_async_wait<0>();

  // Accumulators: register 4c + 2h + e of row j is (pixel 16 wq + gq + 8h, channel 8c + 2tq + e). Lanes gq and
  // gq + 1 swap one value so each holds two adjacent pixels of one channel: one paired store.
  const bool even = (gq & 1) == 0;
#pragma unroll
  for (int j = 0; j < MS; ++j) {
    const int oh = oh0 + wgi * MS + j;
    if (oh >= d.hout) continue;
#pragma unroll
    for (int c = 0; c < kBN / 8; ++c) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float v0 = acc[j][4 * c + 2 * h], v1 = acc[j][4 * c + 2 * h + 1];
        const float got = __shfl_xor_sync(0xffffffffu, even ? v1 : v0, 4);
        const int co = cot * kBN + 8 * c + 2 * tq + (even ? 0 : 1);
        const int ow = ow0 + wq * 16 + 8 * h + (gq & ~1);
        if (co >= d.cout_g) continue;
        const int64_t oc = int64_t(g) * d.cout_g + co;
        const float bv = bias != nullptr ? static_cast<float>(bias[oc]) : 0.f;
        const float p0 = (even ? v0 : got) + bv, p1 = (even ? got : v1) + bv;
        T* yr = y + ((int64_t(img) * d.cout + oc) * d.hout + oh) * d.wout;
        if (pair && ow + 1 < d.wout) {
          store2(yr + ow, p0, p1);
        } else {
          if (ow < d.wout) yr[ow] = static_cast<T>(p0);
          if (ow + 1 < d.wout) yr[ow + 1] = static_cast<T>(p1);
        }
      }
    }
  }
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
}

int round_up(int a, int b) { return (a + b - 1) / b * b; }

int max_smem(int device) {
  int v = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return v;
}

// Two rows a warpgroup (4 halo-row loads for 6 products on a 3-row kernel), two warpgroups a block.
DwgTile pick(DwgTile t) {
  if (t.rows == 0) t.rows = 2;
  if (t.groups == 0) t.groups = 2;
  return t;
}

DwgGeom geometry(const ConvTParams& p, int elem, DwgTile t, int smem_limit) {
  const int V = 16 / elem;
  const int CH = elem == 2 ? 16 : 8;
  DwgGeom d{};
  d.n = static_cast<int>(p.N);
  d.hin = static_cast<int>(p.Hin);
  d.win = static_cast<int>(p.Win);
  d.hout = static_cast<int>(p.Hout);
  d.wout = static_cast<int>(p.Wout);
  d.kh = static_cast<int>(p.KH);
  d.kw = static_cast<int>(p.KW);
  d.ph = static_cast<int>(p.ph);
  d.pw = static_cast<int>(p.pw);
  d.dh = static_cast<int>(p.dh);
  d.dw = static_cast<int>(p.dw);
  d.cin = static_cast<int>(p.Cin);
  d.cout = static_cast<int>(p.Cout);
  d.cin_g = static_cast<int>(p.Cin_g);
  d.cout_g = static_cast<int>(p.Cout_g);
  const int rows = t.rows * t.groups;
  d.hr = rows + (d.kh - 1) * d.dh;
  d.rp = round_up(V - 1 + kCols + (d.kw - 1) * d.dw, V);
  d.rpv = d.rp / V;
  d.cp = round_up(d.hr * d.rp, 32) + 8;
  d.cpr = elem == 2 ? d.hr * d.rp : d.cp;
  d.halo_words = round_up(elem == 2 ? 8 * d.hr * d.rp : 8 * d.cp, 64);  // the weights after it 256-byte aligned
  d.w_slab = d.kh * d.kw * kBN * 8;
  d.stage_words = d.halo_words + d.w_slab;
  const int extra = elem == 2 ? 8 * d.cp : 0;  // half types: the interleaved halo
  const int table = round_up(d.hr * d.rpv, 4);
  d.stages = (4 * d.stage_words + extra + table) * 4 + 256 <= smem_limit ? 4 : 3;
  d.table_word = d.stages * d.stage_words + extra;
  d.smem_bytes = (d.table_word + table) * 4 + 256;  // + the base's alignment to 256 bytes
  d.chunks = (d.cin_g + CH - 1) / CH;
  d.co_tiles = (d.cout_g + kBN - 1) / kBN;
  d.th_tiles = (d.hout + rows - 1) / rows;
  d.tw_tiles = (d.wout + kCols - 1) / kCols;
  d.hw_in = p.Hin * p.Win;
  // Halo row u serves row j with tap row kh where u - j = (KH - 1 - kh) dh; rows no tap reads are left out.
  const int64_t reach = t.rows + (p.KH - 1) * p.dh;
  d.steps = 0;
  for (int64_t u = 0; u < reach && d.steps <= kMaxSteps; ++u) {
    uint32_t khs = 0xffffffffu;
    for (int j = 0; j < t.rows; ++j) {
      const int64_t r = u - j;
      if (r >= 0 && r % p.dh == 0 && r / p.dh < p.KH) {
        khs &= ~(0xffu << (8 * j));
        khs |= uint32_t(p.KH - 1 - r / p.dh) << (8 * j);
      }
    }
    if (khs == 0xffffffffu) continue;
    if (d.steps < kMaxSteps) {
      d.step_u[d.steps] = static_cast<uint8_t>(u);
      d.step_kh[d.steps] = khs;
    }
    ++d.steps;
  }
  return d;
}

template <typename T, int MS, int G, int KWM>
void launch_typed(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                  at::Tensor& out, cudaStream_t stream) {
  const DwgGeom d = geometry(p, static_cast<int>(sizeof(T)), {MS, G}, max_smem(x.get_device()));
  const int64_t blocks = p.groups * int64_t(d.co_tiles) * d.n * d.th_tiles * d.tw_tiles;
  if (blocks == 0) return;
  const int64_t words = p.groups * int64_t(d.co_tiles) * d.chunks * d.w_slab;
  at::Tensor packed = at::empty({words}, x.options().dtype(at::kInt));
  uint32_t* wp = reinterpret_cast<uint32_t*>(packed.mutable_data_ptr<int>());
  const unsigned pack_blocks = static_cast<unsigned>(std::min<int64_t>((words + 255) / 256, 4096));
  dwg_pack_kernel<T><<<pack_blocks, 256, 0, stream>>>(d, w.const_data_ptr<T>(), wp, words);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  T* y = out.mutable_data_ptr<T>();
  const bool pair = p.Wout % 2 == 0 && reinterpret_cast<uintptr_t>(y) % (2 * sizeof(T)) == 0;
  auto kernel = convt_dwg_kernel<T, MS, G, KWM>;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, d.smem_bytes));
  kernel<<<static_cast<unsigned>(blocks), G * 128, d.smem_bytes, stream>>>(
      d, x.const_data_ptr<T>(), wp, b.defined() ? b.const_data_ptr<T>() : nullptr, y, pair);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T>
void launch_tile(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 DwgTile t, cudaStream_t stream) {
  if (t.groups == 3) {
    if (p.KW <= 4) {
      launch_typed<T, 2, 3, 4>(p, x, w, b, out, stream);
    } else {
      launch_typed<T, 2, 3, 8>(p, x, w, b, out, stream);
    }
  } else if (t.rows == 1) {
    if (p.KW <= 4) {
      launch_typed<T, 1, 2, 4>(p, x, w, b, out, stream);
    } else {
      launch_typed<T, 1, 2, 8>(p, x, w, b, out, stream);
    }
  } else if (t.rows == 4) {
    launch_typed<T, 4, 2, 4>(p, x, w, b, out, stream);
  } else if (p.KW <= 4) {
    launch_typed<T, 2, 2, 4>(p, x, w, b, out, stream);
  } else {
    launch_typed<T, 2, 2, 8>(p, x, w, b, out, stream);
  }
}

bool tile_known(DwgTile t) {
  return (t.groups == 2 && (t.rows == 1 || t.rows == 2 || t.rows == 4)) || (t.groups == 3 && t.rows == 2);
}

}  // namespace

bool dwg_supports(const ConvTParams& p, const at::Tensor& x, bool tf32, DwgTile tile) {
  const at::ScalarType dt = x.scalar_type();
  if (dt != at::kHalf && dt != at::kBFloat16 && !(dt == at::kFloat && tf32)) return false;
  if (p.sh != 1 || p.sw != 1) return false;
  const int elem = static_cast<int>(x.element_size()), V = 16 / elem;
  const int64_t lim = int64_t(1) << 30;
  if (p.Win % V != 0 || reinterpret_cast<uintptr_t>(x.const_data_ptr()) % 16 != 0) return false;
  if (p.Hin * p.Win >= lim || p.Hout >= lim || p.Wout >= lim || p.Cin >= lim || p.Cout >= lim || p.N >= lim)
    return false;
  if (p.KH * p.dh >= 4096 || p.KW * p.dw >= 4096 || p.ph >= lim || p.pw >= lim) return false;
  // The step schedule: halo rows within a byte, tap rows below 0xff.
  if (4 + (p.KH - 1) * p.dh > 255 || p.KH >= 255) return false;
  const DwgTile t = pick(tile);
  // A step holds a halo row's fragments for every tap column: 8 at most (4 with 4 rows a warpgroup).
  if (!tile_known(t) || p.KW > (t.rows == 4 ? 4 : 8) || !wg_available(x.get_device())) return false;
  const int limit = max_smem(x.get_device());
  const DwgGeom d = geometry(p, elem, t, limit);
  if (d.smem_bytes > limit || d.steps > kMaxSteps) return false;
  if (int64_t(d.hr) * d.rp * 8 >= lim) return false;
  return p.groups * int64_t(d.co_tiles) * d.n * d.th_tiles * d.tw_tiles < (int64_t(1) << 31);
}

void launch_dwg(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                DwgTile tile, cudaStream_t stream) {
  const DwgTile t = pick(tile);
  CONVT_CHECK(tile_known(t), "convt: the wgmma dense kernel takes 1, 2 or 4 rows a warpgroup and 2 warpgroups, or 2 "
              "rows and 3 warpgroups, not ", t.rows, " and ", t.groups);
  switch (x.scalar_type()) {
    case at::kFloat: launch_tile<float>(p, x, w, b, out, t, stream); break;
    case at::kHalf: launch_tile<at::Half>(p, x, w, b, out, t, stream); break;
    case at::kBFloat16: launch_tile<at::BFloat16>(p, x, w, b, out, t, stream); break;
    default: TORCH_CHECK(false, "convt: the wgmma dense kernel takes float32 (as TF32), float16 and bfloat16");
  }
}

}  // namespace convt
