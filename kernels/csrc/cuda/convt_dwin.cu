// The window kernel (v27; see convt_dwin.h). v24's channels-as-N tiles (convt_dwg.cu) issue one m64n32k8 a tap and
// output row: 2 KB of halo and 1 KB of weights read from shared memory for 16 cycles of tensor work, 192 bytes a
// cycle against the SM's 128, so shared memory set their pace. Here N is the three kernel rows' weights side by side
// (96 = 3 slots x 32 channels): one m64n96k8 reads the halo row's 64 pixels once (2 KB) with 3 KB of weights for 48
// cycles of products, 107 bytes a cycle. Slot s of halo row i is the partial sum of output row i - s, so the
// instruction's 48 accumulators are three output rows: once a halo row's products retired, the row in slot 2 is whole
// and stored, and the window shifts down (slot 2 <- 1 <- 0 <- zeros).
//
// A block is one producer warpgroup and two consumer warpgroups, in two independent halves: producer warps 2h, 2h + 1
// feed consumer warpgroup h through a ring of `nb` pixel-major halo rows (mbarriers full/empty), from a ring of
// `stages` raw rows their cp.async fill (a named barrier a row, as v18). A stage is one input row, 64 + KW - 1
// columns (whole 16-byte copies), of every input channel of the group. Every group's weights stay in shared memory
// for the whole kernel, packed once a call as [group][chunk][kernel column][k half][slot x 32 channels][16 bytes].
// Consumer warpgroup h of block b walks tiles 2b + h, 2b + h + 2 gridDim.x, ...: a tile is a band of output rows of
// one 64-column strip, image and group; strips fastest, so neighbouring strips share their halo columns in L2.
#include "convt_dwin.h"

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <type_traits>
#include <vector>

#include "convt_dense.h"
#include "convt_dwg.h"
#include "convt_edge.h"
#include "smem_attr.h"
#include "tma_map.h"
#include "wgmma_ops.h"

namespace convt {
namespace {

#include "cp_async.cuh"
#include "mma_sync.cuh"
#include "store_pair.cuh"
#include "wg_ptx.cuh"
#include "dwg_device.cuh"

constexpr int kKH = 3;           // kernel rows: the slots of N
constexpr int kSlot = 32;        // output channels a slot
constexpr int kN = kKH * kSlot;  // wgmma's N
constexpr int kCols = 64;        // output columns a strip: wgmma's M
constexpr int kMaxNb = 4;
constexpr int kMaxStages = 4;
constexpr int kG = 2;   // consumer warpgroups a block
constexpr int kPW = 2;  // producer warps a consumer: the producer warpgroup split in two
constexpr int kPT = 32 * kPW;

struct DwinGeom : StrideOneDims {
  int chunks;              // input-channel chunks a group: one wgmma k-step each (8 fp32, 16 half)
  int rp, rpv;             // a halo row's pixels (whole 16-byte copies), and its copies
  int plane;               // pitch of a pixel-major channel group, in pixels
  int cpr;                 // a raw channel's pitch in elements (half types: + 8, ldmatrix rows in 8 banks)
  int raw_bytes, pm_bytes; // a stage: the raw row of every channel; its pixel-major copy
  int w_bytes;             // every group's packed weights
  int stages, nb;          // raw stages and pixel-major buffers, each producer half
  int band, bands, strips; // output rows a tile; tiles down and across an image
  int groups;              // more than one: the tensor map has a group dimension
  int tma_bytes;           // a raw stage's bytes by TMA (fp32): rp columns x cin_g channels; 0 on the cp.async path
  int raw_off, pm_off;     // shared-memory offsets of half 0's rings (half 1's follow them); weights at kWOff
  int smem_bytes;
};
constexpr int kWOff = 256;  // after the mbarriers: full[kG][kMaxNb], empty[kG][kMaxNb], raw[kG][kMaxStages]

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// wgmma.fence with every accumulator bound to it: the window's moves (below) land before it, never inside the
// pipeline stage it opens, where ptxas would serialize every wgmma (C7515).
__device__ __forceinline__ void fence_acc(float (&a)[kKH][16]) {
  asm volatile(
      "wgmma.fence.sync.aligned;\n"
      : "+f"(a[0][0]), "+f"(a[0][1]), "+f"(a[0][2]), "+f"(a[0][3]), "+f"(a[0][4]), "+f"(a[0][5]), "+f"(a[0][6]),
        "+f"(a[0][7]), "+f"(a[0][8]), "+f"(a[0][9]), "+f"(a[0][10]), "+f"(a[0][11]), "+f"(a[0][12]), "+f"(a[0][13]),
        "+f"(a[0][14]), "+f"(a[0][15]), "+f"(a[1][0]), "+f"(a[1][1]), "+f"(a[1][2]), "+f"(a[1][3]), "+f"(a[1][4]),
        "+f"(a[1][5]), "+f"(a[1][6]), "+f"(a[1][7]), "+f"(a[1][8]), "+f"(a[1][9]), "+f"(a[1][10]), "+f"(a[1][11]),
        "+f"(a[1][12]), "+f"(a[1][13]), "+f"(a[1][14]), "+f"(a[1][15]), "+f"(a[2][0]), "+f"(a[2][1]), "+f"(a[2][2]),
        "+f"(a[2][3]), "+f"(a[2][4]), "+f"(a[2][5]), "+f"(a[2][6]), "+f"(a[2][7]), "+f"(a[2][8]), "+f"(a[2][9]),
        "+f"(a[2][10]), "+f"(a[2][11]), "+f"(a[2][12]), "+f"(a[2][13]), "+f"(a[2][14]), "+f"(a[2][15])
      :
      : "memory");
}
#endif

template <typename T>
struct Elem {
  static constexpr bool kHalf = sizeof(T) == 2;
  static constexpr int kCh = kHalf ? 16 : 8;                   // input channels a chunk
  static constexpr int kV = 16 / static_cast<int>(sizeof(T));  // elements a 16-byte copy
};

// Word i of the packed weights: [group][chunk][kw][k half][n = slot * 32 + channel][4 words], slot s holding kernel
// row KH - 1 - s (halo row i feeds output row i - s through kernel row KH - 1 - s). A word is one TF32 (rounded) or a
// pair of half values, the lower k in the low half; input channels past the group and channels past cout_g are 0.
template <typename T>
__global__ void dwin_pack_kernel(const DwinGeom d, const T* __restrict__ w, uint32_t* __restrict__ wp, int64_t words) {
  constexpr int KC = Elem<T>::kCh;
  const int kk = d.kh * d.kw;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < words; i += int64_t(gridDim.x) * blockDim.x) {
    const int e = static_cast<int>(i & 3);
    int64_t r = i >> 2;
    const int n = static_cast<int>(r % kN);
    r /= kN;
    const int khalf = static_cast<int>(r & 1);
    r >>= 1;
    const int kw = static_cast<int>(r % d.kw);
    r /= d.kw;
    const int c = static_cast<int>(r % d.chunks);
    const int64_t g = r / d.chunks;
    const int co = n % kSlot, kh = kKH - 1 - n / kSlot, kword = 4 * khalf + e;
    auto weight = [&](int ci) -> T {
      return ci < d.cin_g && co < d.cout_g ? w[((g * d.cin_g + ci) * d.cout_g + co) * kk + kh * d.kw + kw] : T(0);
    };
    if constexpr (Elem<T>::kHalf) {
      const int ci = c * KC + 2 * kword;
      const T lo = weight(ci), hi = weight(ci + 1);
      wp[i] = uint32_t(reinterpret_cast<const uint16_t&>(lo)) | (uint32_t(reinterpret_cast<const uint16_t&>(hi)) << 16);
    } else {
      wp[i] = tf32_round(weight(c * KC + kword));
    }
  }
}

// TMA (fp32, v52; use_tma): a raw stage is one box of the tensor map, rp columns x the group's channels, landing on
// raw[h][st] from one thread; in place of ~11 cp.async a producer thread a stage (ncu s55: 16 instructions a copy,
// ~130 of a producer thread's ~515 a stage; the consumers waited on `full` ~12% of their time). Without L2 promotion:
// 256-byte promotion read kb71's 72-column halo rows as 773 MB from DRAM, none as 668 (cp.async: 582).
template <typename T, bool TMA>
__global__ void __launch_bounds__((kG + 1) * 128, 1)
    convt_dwin_kernel(const __grid_constant__ CUtensorMap xmap, const DwinGeom d, const T* __restrict__ x,
                      const uint32_t* __restrict__ wp, const T* __restrict__ bias, T* __restrict__ y, bool pair,
                      unsigned tiles) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int CH = Elem<T>::kCh, V = Elem<T>::kV, NTH = (kG + 1) * 128;
  using Op = typename wg::OpFor<T>::type;
  extern __shared__ __align__(128) uint32_t smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // Warp-uniform to the compiler through a shuffle: descriptors built from it stay in uniform registers.
  const int wgi = __shfl_sync(0xffffffffu, warp >> 2, 0);
  const int h = wgi == 0 ? warp / kPW : wgi - 1;  // the consumer warpgroup this warp is or feeds
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem);
  uint64_t* full = bars + h * kMaxNb;
  uint64_t* empty = bars + kG * kMaxNb + h * kMaxNb;
  uint64_t* rawf = bars + 2 * kG * kMaxNb + h * kMaxStages;
  if (tid == 0) {
    for (int b = 0; b < kG * kMaxNb; ++b) {
      mbar_init(bars + b, kPT);               // full: the producer warps' threads
      mbar_init(bars + kG * kMaxNb + b, 4);  // empty: the consumer warpgroup's warps
    }
    if constexpr (TMA) {
      for (int b = 0; b < kG * kMaxStages; ++b) mbar_init(bars + 2 * kG * kMaxNb + b, 1);  // raw: the TMA's bytes
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if constexpr (TMA) {
    if (tid == 0 && (smem_addr(smem) & 127) != 0) __trap();  // a box lands on 128 bytes
    // A box holds the group's cin_g channels; the chunk's channels past them stay zero for the whole kernel.
    const int pad = (d.chunks * Elem<T>::kCh - d.cin_g) * d.cpr;
    for (int i = tid; i < kG * d.stages * pad; i += NTH) {
      const int slot = i / pad;
      float* raw = reinterpret_cast<float*>(reinterpret_cast<char*>(smem) + d.raw_off + slot * d.raw_bytes);
      raw[d.cin_g * d.cpr + i % pad] = 0.f;
    }
  }
  {  // every group's weights, once: read by wgmma (the async proxy) from here on
    const uint4* src = reinterpret_cast<const uint4*>(wp);
    uint4* dst = reinterpret_cast<uint4*>(reinterpret_cast<char*>(smem) + kWOff);
    for (int i = tid; i < d.w_bytes / 16; i += NTH) dst[i] = src[i];
    fence_proxy_async();
  }
  __syncthreads();
  const uint32_t w_s = smem_addr(reinterpret_cast<char*>(smem) + kWOff);
  const uint32_t raw_s = smem_addr(reinterpret_cast<char*>(smem) + d.raw_off) + h * d.stages * d.raw_bytes;
  const uint32_t pm_s = smem_addr(reinterpret_cast<char*>(smem) + d.pm_off) + h * d.nb * d.pm_bytes;

  const unsigned walker = kG * blockIdx.x + h, step = kG * gridDim.x;
  const int own = walker < tiles ? static_cast<int>((tiles - 1 - walker) / step + 1) : 0;
  struct At {
    int img, g, o0, rows, ow0, ca, shift;
  };
  auto tile_at = [&](int k) {
    unsigned t = walker + unsigned(k) * step;
    At a;
    const int strip = static_cast<int>(t % d.strips);
    t /= d.strips;
    const int band = static_cast<int>(t % d.bands);
    t /= d.bands;
    a.img = static_cast<int>(t % d.n);
    a.g = static_cast<int>(t / d.n);
    a.o0 = band * d.band;
    a.rows = min(d.band, d.hout - a.o0);
    a.ow0 = strip * kCols;
    const int c0 = a.ow0 + d.pw - (d.kw - 1) * d.dw;
    a.ca = c0 >= 0 ? c0 / V * V : -((V - 1 - c0) / V) * V;  // floor to a copy boundary
    a.shift = c0 - a.ca;
    return a;
  };

  if (wgi == 0) {
    // Producer of consumer h: kPT threads. The next stage to issue: tile ik, halo row ir of its hr.
    const int pt = tid % kPT;
    const int nch = d.chunks * CH;  // channels a stage: the group's, padded to whole chunks
    // Copies: a thread takes 16-byte column cl, cl + cstep, ... of channels cr, cr + crow, ... (where a row's copies
    // fit the threads, one column of every crow-th channel): a copy is a pointer step, not a (channel, column) pair
    // recomputed from a flat index (ncu of the first form: ~40 instructions a copy, 16% of the kernel's).
    const int cstep = min(kPT, d.rpv), crow = kPT / cstep, cl = pt % cstep, cr = pt / cstep;
    const int64_t chan_step = int64_t(crow) * d.hw_in;
    const uint32_t dst_step = static_cast<uint32_t>(crow * d.cpr * sizeof(T));
    int ik = 0, ir = 0, hr = 0, ih0 = 0, ca = 0, t_img = 0, t_g = 0;
    const T* x_tile = x;
    auto issue = [&](int st) {
      if (ik < own) {
        if (ir == 0) {
          const At a = tile_at(ik);
          hr = a.rows + kKH - 1;
          ih0 = a.o0 + d.ph - (kKH - 1);
          ca = a.ca;
          t_img = a.img;
          t_g = a.g;
          x_tile = x + (int64_t(a.img) * d.cin + int64_t(a.g) * d.cin_g) * d.hw_in;
        }
        const int ih = ih0 + ir;
        if constexpr (TMA) {
          if (pt == 0) {  // rows and columns past the image come as zeros
            char* dst = reinterpret_cast<char*>(smem) + d.raw_off + (h * d.stages + st) * d.raw_bytes;
            mbar_expect_tx(&rawf[st], d.tma_bytes);
            if (d.groups > 1) tma_load_5d(dst, &xmap, &rawf[st], ca, ih, 0, t_g, t_img);
            else tma_load_4d(dst, &xmap, &rawf[st], ca, ih, 0, t_img);
          }
        }
        const bool row_in = ih >= 0 && ih < d.hin;
        if (!TMA && cr < crow) {
          const T* x_row = x_tile + int64_t(cr) * d.hw_in + int64_t(row_in ? ih : 0) * d.win + ca;
          const uint32_t dst_row = raw_s + st * d.raw_bytes + static_cast<uint32_t>(cr * d.cpr * sizeof(T));
          for (int col = cl; col < d.rpv; col += cstep) {
            const int iw = ca + col * V;
            const bool col_in = row_in && iw >= 0 && iw < d.win;
            const T* src = x_row + col * V;
            uint32_t dst = dst_row + static_cast<uint32_t>(col * V * sizeof(T));
            for (int ch = cr; ch < nch; ch += crow, src += chan_step, dst += dst_step) {
              const bool in = col_in && ch < d.cin_g;
              cp_async16_n(dst, in ? src : x, in ? 16 : 0);
            }
          }
        }
        if (++ir == hr) {
          ir = 0;
          ++ik;
        }
      }
      if constexpr (!TMA) cp_async_commit();
    };
    int ist = 0;
    for (int s = 0; s + 1 < d.stages; ++s) {
      issue(ist);
      ist = ist + 1 == d.stages ? 0 : ist + 1;
    }
    int st = 0, raw_par = 0;
    RingPos ring;
    for (int k = 0; k < own; ++k) {
      const int rows_k = tile_at(k).rows + kKH - 1;
      for (int i = 0; i < rows_k; ++i) {
        const int b = ring.b;
        if constexpr (TMA) mbar_wait(&rawf[st], raw_par);  // the stage's box landed
        else cp_wait_upto<3>(d.stages - 2);                // this thread's copies of this stage landed
        asm volatile("bar.sync %0, %1;\n" ::"r"(1 + h), "n"(kPT) : "memory");  // every thread's; stage st - 1 done
        issue(ist);
        ist = ist + 1 == d.stages ? 0 : ist + 1;
        mbar_wait(&empty[b], ring.parity() ^ 1);  // the consumers retired the row nb back (a fresh barrier passes 1)
        const uint32_t src = raw_s + st * d.raw_bytes, dst = pm_s + b * d.pm_bytes;
        if constexpr (Elem<T>::kHalf) {
          // A warp 32 pixels x 8 channels a step: ldmatrix.trans reads 8 channels x 8 pixels four times (a lane the
          // row of its matrix lane / 8, channel lane % 8), stmatrix writes 8 pixels x 8 channels back.
          const int mi = lane >> 3, r = lane & 7, p32 = d.plane / 32, units = 2 * d.chunks * p32;
          int cg = 0, qb = warp % kPW;  // channel group (8 channels), 32-pixel block; p32 >= 3 > kPW
          for (int u = warp % kPW; u < units; u += kPW) {
            uint32_t v[4];
            ldsm_x4_trans(v, src + 2u * static_cast<uint32_t>((8 * cg + r) * d.cpr + 32 * qb + 8 * mi));
            stsm_x4(dst + 16u * static_cast<uint32_t>(cg * d.plane + 32 * qb + 8 * mi + r), v);
            qb += kPW;
            if (qb >= p32) {
              qb -= p32;
              ++cg;
            }
          }
        } else {
          // A thread a (pixel, chunk): 8 channels gathered into two 16-byte rows (one a channel group), TF32-rounded;
          // two at a time, their loads in flight together. Pixels past rp are never read.
          const int units = d.chunks * d.rp;
          int c = 0, q = pt;  // rp >= 64 = kPT: a step wraps at most once
          auto addr = [&](int cc, int qq, int e) {
            return src + 4u * static_cast<uint32_t>((cc * 8 + e) * d.cpr + qq);
          };
          auto put = [&](int cc, int qq, uint32_t (&v)[8]) {
            const uint32_t t = dst + 16u * static_cast<uint32_t>(2 * cc * d.plane + qq);
            sts128(t, v[0], v[1], v[2], v[3]);
            sts128(t + 16u * d.plane, v[4], v[5], v[6], v[7]);
          };
          auto advance = [&] {
            q += kPT;
            if (q >= d.rp) {
              q -= d.rp;
              ++c;
            }
          };
          int u = pt;
          for (; u + kPT < units; u += 2 * kPT) {
            const int c1 = c, q1 = q;
            advance();
            uint32_t v[2][8];
#pragma unroll
            for (int e = 0; e < 8; ++e) {
              v[0][e] = lds32(addr(c1, q1, e));
              v[1][e] = lds32(addr(c, q, e));
            }
#pragma unroll
            for (int e = 0; e < 16; ++e) v[e >> 3][e & 7] = tf32_round(__uint_as_float(v[e >> 3][e & 7]));
            put(c1, q1, v[0]);
            put(c, q, v[1]);
            advance();
          }
          if (u < units) {
            uint32_t v[8];
#pragma unroll
            for (int e = 0; e < 8; ++e) v[e] = tf32_round(__uint_as_float(lds32(addr(c, q, e))));
            put(c, q, v);
          }
        }
        fence_proxy_async();  // this thread's st.shared, read next by wgmma
        mbar_arrive(&full[b]);
        if (++st == d.stages) {
          st = 0;
          raw_par ^= 1;
        }
        ring.next(d.nb);
      }
    }
    if constexpr (!TMA) cp_async_wait<0>();
    return;
  }

  // Consumer warpgroup h. acc[s] is output row i - s while halo row i's products run. wgmma names its accumulators
  // as one contiguous register range, so the window cannot rotate by renaming (ptxas copied every permutation in and
  // out of one range, a wait each): it shifts instead, once the row's products retired.
  const int wq = warp & 3, gq = lane >> 2, tq = lane & 3;
  const uint32_t chunk_units = 2u * d.plane;  // a chunk's pixel-major bytes / 16
  const uint32_t blk_units = 2u * kN;         // a (chunk, kernel column)'s packed weights / 16
  float acc[kKH][16];
  zero_acc(acc);
  RingPos ring;
  const int64_t hw_out = int64_t(d.hout) * d.wout;
  for (int k = 0; k < own; ++k) {
    const At a = tile_at(k);
    const int hr = a.rows + kKH - 1;
    // fp32 on a whole strip of a full slot (v52): register 4c + 2h + e is pixel 16 wq + gq + 8h of channel
    // 8c + 2 tq + e, stored as it lies, 4 bytes a lane (a warp's store: 4 channels x 32 contiguous bytes), from one
    // pointer a row. store_rows_sw's pairs cost ~170 instructions a warp and row (ncu s55: 44% of a consumer's time),
    // most of them 64-bit addresses per channel block and the shuffles that make the pairs.
    const bool direct = TMA && d.cout_g == kSlot && a.ow0 + kCols <= d.wout;
    float* yd = nullptr;
    float bd[8];
    if constexpr (std::is_same_v<T, float>) {
      yd = reinterpret_cast<float*>(y) +
           ((int64_t(a.img) * d.cout + int64_t(a.g) * d.cout_g + 2 * tq) * d.hout + a.o0) * d.wout + a.ow0 +
           16 * wq + gq - int64_t(kKH - 1) * d.wout;  // halo row i stores output row o0 + i - 2
#pragma unroll
      for (int r = 0; r < 8; ++r) {
        const int co = 8 * (r >> 1) + 2 * tq + (r & 1);
        bd[r] = bias != nullptr && co < d.cout_g ? static_cast<float>(bias[int64_t(a.g) * d.cout_g + co]) : 0.f;
      }
    }
    const uint32_t a_off = static_cast<uint32_t>(a.shift + (d.kw - 1) * d.dw);  // kernel column 0's first pixel
    const uint32_t wlo = desc_lo(w_s + static_cast<uint32_t>(a.g * d.chunks * d.kw) * (32u * kN), 16 * kN);
    const int taps = d.chunks * d.kw;  // wgmma a halo row
    for (int i = 0; i < hr; ++i) {
      const int b = ring.b;
      mbar_wait(&full[b], ring.parity());
      fence_acc(acc);
      const uint32_t alo = desc_lo(pm_s + b * d.pm_bytes, 16 * d.plane) + a_off;
      // One loop over (chunk, kernel column), entered once at least (chunks, kw >= 1): with a path around it the
      // accumulators would meet in a second phi, whose copies ptxas finds inside the stage (C7515).
      uint32_t a_desc = alo, w_desc = wlo;
      int kw = 0, t = 0;
      do {
        wg::WgmmaSlots<Op, kKH>::run(acc[0], acc[1], acc[2], desc_of(a_desc), desc_of(w_desc));
        w_desc += blk_units;
        if (++kw == d.kw) {
          kw = 0;
          a_desc += chunk_units + (d.kw - 1) * d.dw;
        } else {
          a_desc -= d.dw;
        }
      } while (++t < taps);
      wgmma_commit();
      wgmma_wait<0>();
#pragma unroll
      for (int s = 0; s < kKH; ++s) fence_regs(acc[s]);
      if (lane == 0) mbar_arrive(&empty[b]);
      ring.next(d.nb);
      if (i >= kKH - 1) {  // output row i - 2 took its last products
        if (direct) {
          // Every value in its own register before the first store: a store reads its register late, and a register
          // written again behind a pending store waits for it (s55 call B: a long-scoreboard stall on 17% of samples).
          float v[16];
#pragma unroll
          for (int j = 0; j < 16; ++j) {
            v[j] = acc[kKH - 1][j] + bd[2 * (j >> 2) + (j & 1)];
            asm volatile("" : "+f"(v[j]));
          }
          float* yc = yd + int64_t(i) * d.wout;
#pragma unroll
          for (int c = 0; c < 4; ++c) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              float* yp = yc + (e == 0 ? 0 : hw_out);
              yp[0] = v[4 * c + e];
              yp[8] = v[4 * c + 2 + e];
            }
            yc += 8 * hw_out;
          }
        } else {
          store_rows_sw<T, 1, kCols, kSlot>(d, a.img, a.g, 0, a.o0 + i - (kKH - 1), a.ow0,
                                            *reinterpret_cast<const float(*)[1][16]>(&acc[kKH - 1]), bias, y, pair,
                                            wq, gq, tq);
        }
      }
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        acc[2][j] = acc[1][j];
        acc[1][j] = acc[0][j];
        acc[0][j] = 0.f;  // output row i + 1 starts with the next halo row
      }
    }
  }
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
}

int round_up(int a, int b) { return (a + b - 1) / b * b; }

// A test's override of a heuristic: 1 or 0 where the variable starts with one, else -1 (the heuristic decides).
int env_force(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && (v[0] == '0' || v[0] == '1') ? v[0] - '0' : -1;
}

// fp32's v52 path (raw rows by TMA, the epilogue stored as the accumulators lie), everywhere but on output rows off
// 32-byte sectors past L2's size. Session 56 (H200, GPU time, cp.async -> v52): kb71 with padding 1 (rows of 1024
// floats, the same bytes) 481 -> 361 us; kb71 itself (rows of 1026 floats, so a row's 32-byte runs straddle sectors)
// 485 -> 613, reading 716 MB from DRAM for 540 of input; kb71 at a quarter of its batch (135 MB of output) 136 -> 139;
// the four probes under L2's size (17-34 MB of output) 2-20% faster, rows on sectors or not (sessions 55-56). So a
// partial sector evicted before its other half lands is read back from DRAM, and only an output past L2 evicts them.
// At 15 taps or more v52 stays regardless (kb78, rows on sectors: 641 -> 532, paced by instructions; no misaligned
// layer of that many taps was timed).
// CONVT_DWIN_TMA=1 or 0 forces the path on or off (the tests force both; timing one beside the other).
bool use_tma(int taps, bool rows_on_sectors, int64_t out_bytes, int dev) {
  const int force = env_force("CONVT_DWIN_TMA");
  if (force >= 0) return force == 1;
  return taps >= 15 || rows_on_sectors || out_bytes <= device_attribute(cudaDevAttrL2CacheSize, dev);
}

int64_t choose_bands(DwinGeom& d, int groups, int sms);

// rows (where given): the band count's cost, as choose_bands returns it.
DwinGeom geometry(const ConvTParams& p, int elem, int smem_limit, int sms, int64_t* rows = nullptr) {
  const int V = 16 / elem, CH = elem == 2 ? 16 : 8;
  DwinGeom d{};
  static_cast<StrideOneDims&>(d) = StrideOneDims::of(p);
  d.chunks = (d.cin_g + CH - 1) / CH;
  d.rp = round_up(V - 1 + kCols + (d.kw - 1) * d.dw, V);
  d.rpv = d.rp / V;
  d.plane = round_up(d.rp, elem == 2 ? 32 : 8);  // half types transpose 32-pixel blocks; fp32 whole core matrices
  d.cpr = elem == 2 ? d.plane + 8 : d.rp;
  d.raw_bytes = round_up(d.chunks * CH * d.cpr * elem, 128);
  d.pm_bytes = d.chunks * 32 * d.plane;
  d.w_bytes = static_cast<int>(std::min<int64_t>(int64_t(p.groups) * d.chunks * d.kw * 32 * kN, int64_t(1) << 30));
  d.groups = p.groups;
  auto size = [&](int nb, int stages) { return kWOff + d.w_bytes + kG * (stages * d.raw_bytes + nb * d.pm_bytes); };
  // A deeper pixel-major ring first (the consumers' slack), then raw stages (a copy's latency).
  constexpr int kDepths[][2] = {{4, 4}, {4, 3}, {3, 3}, {3, 2}, {2, 2}};
  d.nb = 2;
  d.stages = 2;
  for (const auto& nd : kDepths) {
    if (size(nd[0], nd[1]) <= smem_limit) {
      d.nb = nd[0];
      d.stages = nd[1];
      break;
    }
  }
  d.raw_off = kWOff + d.w_bytes;
  d.pm_off = d.raw_off + kG * d.stages * d.raw_bytes;
  d.smem_bytes = size(d.nb, d.stages);
  d.strips = (d.wout + kCols - 1) / kCols;
  const int64_t cost = choose_bands(d, p.groups, sms);
  if (rows != nullptr) *rows = cost;
  return d;
}

// Returns the count's cost: halo rows a walker streams, rounds included.
int64_t choose_bands(DwinGeom& d, int groups, int sms) {
  // Bands of nearly equal height: the count whose rounds of tiles over the 2 x SMs consumer warpgroups stream the
  // fewest halo rows (each band streams its rows plus 2).
  const int64_t across = int64_t(groups) * d.n * d.strips;
  int64_t best = -1;
  for (int bands = 1; bands <= std::min(d.hout, 256); ++bands) {
    const int band = (d.hout + bands - 1) / bands;
    if ((d.hout + band - 1) / band != bands) continue;  // the same band height as a smaller count
    const int64_t tiles = across * bands, walkers = kG * std::min<int64_t>(sms, (tiles + kG - 1) / kG);
    const int64_t cost = (tiles + walkers - 1) / walkers * (band + kKH - 1);
    if (best < 0 || cost < best) {
      best = cost;
      d.band = band;
      d.bands = bands;
    }
  }
  return best;
}

// A last strip a quarter of kCols wide or less costs a full strip's rows (wgmma computes all kCols pixels; s58 call
// D: kb71's 2-column strip alone, 8 tiles of 516 rows, 862 us) and can keep the full strips from fitting fewer rounds
// (kb71, 1026 columns: 17 strips in 11 bands over 5.7 rounds; its 16 full strips fit 2 bands, one round). So the
// full strips run alone, in their own band count, and the edge kernel (convt_edge.cu) writes the last strip's
// columns, where the cost model's rows fall by more than a launch's worth (~3 rows of 1.4-1.7 us). Session 59 (H200,
// GPU time) with the last strip in a second window launch: kb71 484 -> 463 us TF32; that launch was ~38 us, the
// edge kernel's ~21 (session 61: kb71 454), and beside the window kernel (session 62) it hides: 449.
// CONVT_DWIN_SPLIT=1 or 0 forces it on any partial last strip, or off (the tests). Returns whether to split; wide
// is then the full strips' geometry.
bool split_narrow(const DwinGeom& d, int64_t whole_rows, const ConvTParams& p, int elem, int sms, DwinGeom& wide) {
  const int tail = d.wout % kCols, force = env_force("CONVT_DWIN_SPLIT");
  if (d.strips < 2 || tail == 0 || force == 0 || (force < 0 && tail > kCols / 4) || !edge_supports(p, elem)) {
    return false;
  }
  // The full strips take up to 256 bands; the tile count must stay within dwin_supports' bound.
  if (int64_t(p.groups) * d.n * d.strips * 256 >= (int64_t(1) << 31)) return false;
  DwinGeom w = d;
  w.strips = d.strips - 1;
  if (force != 1 && choose_bands(w, static_cast<int>(p.groups), sms) + 3 >= whole_rows) return false;
  wide = w;
  return true;
}

// The edge kernel beside the window kernel: the full strips' tiles are a whole number of rounds over the SMs, so
// the SMs past the window kernel's grid idle for its whole run (kb71: 128 blocks on 132 SMs for ~420 us); the edge's
// blocks, on a second stream and submitted after the window kernel, run there. A stream and two events per host
// thread and device: concurrent callers must not wait on one another's records. Fork and join are event waits, so a
// CUDA-graph capture follows them and the captured graph has the same edges.
struct Beside {
  c10::cuda::CUDAStream side;
  cudaEvent_t fork = nullptr, join = nullptr;
  explicit Beside(int dev) : side(c10::cuda::getStreamFromPool(false, static_cast<c10::DeviceIndex>(dev))) {
    C10_CUDA_CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    C10_CUDA_CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  }
  Beside(const Beside&) = delete;
  Beside& operator=(const Beside&) = delete;
  ~Beside() {  // at a thread's exit; at the process's, the runtime may be gone already, so errors are ignored
    cudaEventDestroy(fork);
    cudaEventDestroy(join);
  }
};

Beside& beside(int dev) {
  thread_local std::vector<std::unique_ptr<Beside>> per_device;
  if (dev >= static_cast<int>(per_device.size())) per_device.resize(dev + 1);
  if (!per_device[dev]) per_device[dev] = std::make_unique<Beside>(dev);
  return *per_device[dev];
}

template <typename T>
void launch_typed(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                  at::Tensor& out, cudaStream_t stream) {
  const int dev = x.get_device(), sms = sm_count(dev);
  int64_t whole_rows = 0;
  const DwinGeom d = geometry(p, static_cast<int>(sizeof(T)), max_smem_optin(dev), sms, &whole_rows);
  if (int64_t(p.groups) * d.n * d.bands * d.strips == 0) return;
  const int64_t words = d.w_bytes / 4;
  at::Tensor packed = at::empty({words}, x.options().dtype(at::kInt));
  const unsigned pack_blocks = static_cast<unsigned>(std::min<int64_t>((words + 255) / 256, 4096));
  dwin_pack_kernel<T><<<pack_blocks, 256, 0, stream>>>(
      d, w.const_data_ptr<T>(), reinterpret_cast<uint32_t*>(packed.mutable_data_ptr<int>()), words);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  T* y = out.mutable_data_ptr<T>();
  const bool pair = p.Wout % 2 == 0 && reinterpret_cast<uintptr_t>(y) % (2 * sizeof(T)) == 0;
  // fp32 raw rows by TMA: the box's [channel][column] is the raw layout (cpr == rp); a box dimension is at most 256,
  // and the input's rows are whole 16-byte copies on a 16-byte-aligned base (dwg_operands_ok).
  const bool on_sectors = p.Wout % 8 == 0 && reinterpret_cast<uintptr_t>(y) % 32 == 0;
  const bool tma = std::is_same_v<T, float> && d.rp <= 256 && d.cin_g <= 256 &&
                   use_tma(kKH * d.kw, on_sectors, out.numel() * int64_t(sizeof(T)), dev);
  CUtensorMap xmap{};
  DwinGeom dg = d;
  if (tma) {
    xmap = input_map(p, x.const_data_ptr(), cuuint32_t(d.rp), 1, cuuint32_t(d.cin_g), false,
                     CU_TENSOR_MAP_L2_PROMOTION_NONE);
    dg.tma_bytes = d.rp * d.cin_g * static_cast<int>(sizeof(T));
  }
  DwinGeom wide{};
  const bool split = split_narrow(dg, whole_rows, p, static_cast<int>(sizeof(T)), sms, wide);
  if (split) dg = wide;
  // The edge beside the window kernel: the fork is recorded before the window kernel, so the edge does not wait for
  // it, and the edge (behind its own pack kernel) is submitted after it, so the window kernel's blocks take the SMs
  // first. The edge's packed weights are allocated on the side stream, so their memory is reused only behind it.
  const bool on_side = split && env_force("CONVT_DWIN_BESIDE") != 0;
  Beside* bs = on_side ? &beside(dev) : nullptr;
  if (on_side) C10_CUDA_CHECK(cudaEventRecord(bs->fork, stream));
  auto go = [&](auto kernel) {
    allow_dynamic_smem(kernel, d.smem_bytes);
    const int64_t tiles = int64_t(p.groups) * d.n * dg.bands * dg.strips;
    kernel<<<static_cast<unsigned>(std::min<int64_t>((tiles + kG - 1) / kG, sms)), (kG + 1) * 128, d.smem_bytes,
             stream>>>(xmap, dg, x.const_data_ptr<T>(), reinterpret_cast<const uint32_t*>(packed.const_data_ptr<int>()),
                       b.defined() ? b.const_data_ptr<T>() : nullptr, y, pair, static_cast<unsigned>(tiles));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    if (!split) return;
    if (!on_side) {
      launch_edge(p, x, w, b, out, dg.strips * kCols, stream);
      return;
    }
    C10_CUDA_CHECK(cudaStreamWaitEvent(bs->side.stream(), bs->fork, 0));
    {
      const c10::cuda::CUDAStreamGuard side_current(bs->side);
      launch_edge(p, x, w, b, out, dg.strips * kCols, bs->side.stream());
    }
    C10_CUDA_CHECK(cudaEventRecord(bs->join, bs->side.stream()));
    C10_CUDA_CHECK(cudaStreamWaitEvent(stream, bs->join, 0));
  };
  if constexpr (std::is_same_v<T, float>) {
    if (tma) {
      go(convt_dwin_kernel<T, true>);
      return;
    }
  }
  go(convt_dwin_kernel<T, false>);
}

}  // namespace

bool dwin_supports(const ConvTParams& p, const at::Tensor& x, bool tf32) {
  if (p.KH != kKH || p.dh != 1 || p.Cout_g > kSlot || !dwg_operands_ok(p, x, tf32)) return false;
  const int dev = x.get_device(), limit = max_smem_optin(dev);
  const DwinGeom d = geometry(p, static_cast<int>(x.element_size()), limit, sm_count(dev));
  return d.smem_bytes <= limit && int64_t(p.groups) * d.n * d.bands * d.strips < (int64_t(1) << 31);
}

void launch_dwin(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 cudaStream_t stream) {
  switch (x.scalar_type()) {
    case at::kFloat: launch_typed<float>(p, x, w, b, out, stream); break;
    case at::kHalf: launch_typed<at::Half>(p, x, w, b, out, stream); break;
    case at::kBFloat16: launch_typed<at::BFloat16>(p, x, w, b, out, stream); break;
    default: TORCH_CHECK(false, "convt: the window kernel takes float32 (as TF32), float16 and bfloat16");
  }
}

}  // namespace convt
