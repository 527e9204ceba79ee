// The dense path on wgmma (see convt_dwg.h). The dense kernel (convt_dense.cu) is latency-bound on mma.sync, and
// the first wgmma form of it (v16: pixels as M from registers, loaded out of the NCHW halo at every tap) spent its
// time on those loads. Here neither operand is loaded a product:
// - M = 64 output channels: a tap's weights are wgmma's A, four registers a thread, one 16-byte shared load a tap;
// - N = 64 or 128 output columns of one row: the input halo, transposed once a chunk into a pixel-major copy where
//   pixel q of an 8 (half) or 4 (fp32) channel group is the 16-byte row q. wgmma's K-major layout without swizzle
//   is 8 x 16-byte core matrices of 8 consecutive rows, so a shift by one pixel is one row: each tap (and each
//   output row of a warpgroup) is the same descriptor plus an offset.
//
// A block is G warpgroups x MS output rows x N columns of one image and group, and 64 output channels. Per chunk of
// input channels (8 fp32 or 16 half ones: one wgmma k-step):
// - cp.async brings the chunk's NCHW halo into a ring of raw stages, `stages - 1` chunks ahead;
// - a bulk copy (one thread, an mbarrier) brings its packed weights into one of two buffers, one chunk ahead;
// - while chunk c's wgmma run, the threads transpose chunk c + 1's raw halo into the other pixel-major buffer,
//   after its second tap is issued (TF32-rounding fp32 on the way).
//
// Ordering. A tap's A registers are rewritten only after the wgmma two taps back retired (two register sets, each
// tap commits its group and waits for all but it). After chunk c's first tap, a barrier finds every warpgroup done
// with chunk c - 1 (whose pixel-major buffer the transpose overwrites) and every thread's cp.async of chunk c + 1
// landed; after its last tap, fence.proxy.async and a barrier publish the transposed buffer to wgmma's async proxy.
#include "convt_dwg.h"

#include <c10/cuda/CUDAException.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "convt_dense.h"
#include "convt_tc.h"
#include "wgmma_ops.h"
#include "smem_attr.h"

namespace convt {
namespace {

#include "cp_async.cuh"
#include "mma_sync.cuh"
#include "store_pair.cuh"
#include "wg_ptx.cuh"

constexpr int kBM = 64;         // output channels a block: wgmma's M (v17, v18)
constexpr int kTapWords = 512;  // a tap's packed weights: 128 threads x 4 words (v17)

struct DwgGeom : StrideOneDims {
  int hr, rp, rpv;   // halo rows, row pitch in pixels (whole 16-byte copies), copies a row
  int plane;         // hr * rp rounded up to 32: pixels a pixel-major channel group (its pitch)
  int cpr;           // a raw channel's pitch in elements: plane, + 8 for half types (rows of ldmatrix in 8 banks)
  int raw_words;     // a raw stage: channels x cpr elements
  int bm;            // output channels a channel tile: kBM, or with channels as N the tile's nc
  int tap_words;     // a tap's packed weights: 8 words a channel of the tile (kTapWords at kBM)
  int w_words;       // a chunk's packed weights: taps x tap_words
  int stages;        // raw stages, 2 to 4
  int nb;            // pixel-major buffers and weight buffers: 2 (v17), 2 to 3 (v18)
  int t_word, w_word, raw_word, table_word;  // shared-memory offsets; the mbarriers sit at 0
  int smem_bytes;
  int units;         // transpose units a chunk: half types 32 pixels x 8 channels a warp, fp32 a pixel a thread
  int chunks, co_tiles, th_tiles, tw_tiles;
};

template <typename T>
struct Chunk {
  static constexpr bool kHalf = sizeof(T) == 2;
  static constexpr int kCh = kHalf ? 16 : 8;                   // input channels a chunk: one wgmma k-step
  static constexpr int kV = 16 / static_cast<int>(sizeof(T));  // elements a 16-byte copy (a channel group)
};

// Packed weights: [group][channel tile][chunk][tap][tap_words]. v17 (register A): a tap is [thread of a
// warpgroup][4 words], each thread's wgmma A fragment (mma.sync's m16n8k16 / m16n8k8 A, warp q holding rows 16q..):
// word e is output channel 16 q + lane / 4 + 8 (e & 1), k-word lane % 4 + 4 (e >> 1). v18 (A by descriptor,
// `kmajor`): a tap is [k half (2)][output channel (bm)][4 words], wgmma's K-major core matrices without swizzle
// (8 channels x 16 bytes, 128 bytes apart along M or N, 16 bm along K). A k-word is one TF32 (rounded) or a pair of
// half values, the lower k in the low half.
template <typename T>
__global__ void dwg_pack_kernel(const DwgGeom d, const T* __restrict__ w, uint32_t* __restrict__ wp, int64_t words,
                                bool kmajor) {
  constexpr int KC = Chunk<T>::kCh;
  const int kk = d.kh * d.kw;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < words; i += int64_t(gridDim.x) * blockDim.x) {
    const int wi = static_cast<int>(i % d.tap_words), e = wi & 3;
    int64_t r = i / d.tap_words;
    const int tap = static_cast<int>(r % kk);
    r /= kk;
    const int kc = static_cast<int>(r % d.chunks);
    r /= d.chunks;
    const int cot = static_cast<int>(r % d.co_tiles);
    const int64_t g = r / d.co_tiles;
    int co, kword;
    if (kmajor) {
      co = cot * d.bm + (wi >> 2) % d.bm;
      kword = 4 * (wi / (4 * d.bm)) + e;
    } else {
      const int th = wi >> 2, lane = th & 31;
      co = cot * kBM + 16 * (th >> 5) + (lane >> 2) + 8 * (e & 1);
      kword = (lane & 3) + 4 * (e >> 1);
    }
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

#include "dwg_device.cuh"

template <typename T, int MS, int G, int NP, int MINB>
__global__ void __launch_bounds__(G * 128, MINB)
    convt_dwg_kernel(const DwgGeom d, const T* __restrict__ x, const uint32_t* __restrict__ wp,
                     const T* __restrict__ bias, T* __restrict__ y, bool pair) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int NTH = G * 128, CH = Chunk<T>::kCh, V = Chunk<T>::kV;
  using Op = typename wg::OpFor<T>::type;
  extern __shared__ __align__(128) uint32_t smem[];
  uint64_t* wbar = reinterpret_cast<uint64_t*>(smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // wgi through a shuffle: warp-uniform to the compiler, so its descriptors stay in uniform registers.
  const int wgi = __shfl_sync(0xffffffffu, warp >> 2, 0), wq = warp & 3, gq = lane >> 2, tq = lane & 3;

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
  const int oh0 = thi * G * MS, ow0 = twi * NP;
  const int ih0 = oh0 + d.ph - (d.kh - 1) * d.dh, c0 = ow0 + d.pw - (d.kw - 1) * d.dw;
  const int ca = c0 >= 0 ? c0 / V * V : -((V - 1 - c0) / V) * V;  // floor to a copy boundary
  const int shift = c0 - ca;

  if (tid == 0) {
    mbar_init(&wbar[0], 1);
    mbar_init(&wbar[1], 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  // The halo's copies, the same for every channel and chunk: source offset in the input plane, or -1 for a
  // zero-filled copy (outside the image).
  const int copies = d.hr * d.rpv;
  int* src_tab = reinterpret_cast<int*>(smem + d.table_word);
  for (int j = tid; j < copies; j += NTH) {
    const int row = j / d.rpv, col = j - row * d.rpv;
    const int ih = ih0 + row, iw = ca + col * V;
    src_tab[j] = ih >= 0 && ih < d.hin && iw >= 0 && iw < d.win ? ih * d.win + iw : -1;
  }
  __syncthreads();
  const uint32_t tab_s = smem_addr(src_tab), raw_s = smem_addr(smem + d.raw_word);
  const uint32_t t_s = smem_addr(smem + d.t_word), w_s = smem_addr(smem + d.w_word);
  const T* x_img = x + (int64_t(img) * d.cin + int64_t(g) * d.cin_g) * d.hw_in;
  const uint32_t* w_blk = wp + (int64_t(g) * d.co_tiles + cot) * d.chunks * int64_t(d.w_words);

  auto load_weights = [&](int kc) {
    if (tid == 0 && kc < d.chunks) {
      fence_proxy_async();  // the generic reads of this buffer (chunk kc - 2) before the async proxy's writes
      mbar_expect_tx(&wbar[kc & 1], d.w_words * 4);
      bulk_copy(w_s + 4u * (kc & 1) * d.w_words, w_blk + int64_t(kc) * d.w_words, d.w_words * 4, &wbar[kc & 1]);
    }
  };
  // Chunk kc's raw halo into stage st (kc mod stages, tracked by the caller: no division in the loop).
  auto load_raw = [&](int kc, int st) {
    if (kc < d.chunks) {
      T* halo = reinterpret_cast<T*>(smem + d.raw_word + st * d.raw_words);
      constexpr int TPC = NTH / CH;  // threads a channel
      const int ch = tid / TPC, ci = kc * CH + ch;
      const T* src = x_img + int64_t(ci < d.cin_g ? ci : 0) * d.hw_in;
      for (int j = tid - ch * TPC; j < copies; j += TPC) {
        const int off = static_cast<int>(lds32(tab_s + 4u * j));
        const bool ok = ci < d.cin_g && off >= 0;
        cp_async16_zfill(halo + ch * d.cpr + j * V, ok ? src + off : x, ok);
      }
    }
    cp_async_commit();
  };
  // Units m0..m1 of this warp's (half types) or thread's (fp32) share of chunk kc's pixel-major copy.
  // Half types: unit u is channel group u / (plane / 32), pixels 32 (u % (plane / 32)) onward; ldmatrix.trans reads
  // 8 channels x 8 pixels four times (a lane the row of its matrix lane / 8, channel lane % 8) and stmatrix writes
  // them back as 8 pixels x 8 channels (a lane the row of pixel lane % 8). fp32: unit i is channel group
  // i / plane, pixel i % plane, four channels gathered into 16 bytes, TF32-rounded.
  auto transpose = [&](int kc, int st, int m0, int m1) {
    const uint32_t src = raw_s + 4u * st * d.raw_words;
    const uint32_t dst = t_s + 4u * (kc & 1) * (8 * d.plane);
    if constexpr (Chunk<T>::kHalf) {
      const int upg = d.plane / 32, mi = lane >> 3, r = lane & 7;
      for (int m = m0; m < m1; ++m) {
        const int u = warp + m * (NTH / 32);
        if (u >= d.units) break;
        const int grp = u >= upg ? 1 : 0, q = 32 * (u - grp * upg) + 8 * mi;
        uint32_t v[4];
        ldsm_x4_trans(v, src + 2u * static_cast<uint32_t>((grp * 8 + r) * d.cpr + q));
        stsm_x4(dst + 16u * static_cast<uint32_t>(grp * d.plane + q + r), v);
      }
    } else {
      for (int m = m0; m < m1; ++m) {
        const int i = tid + m * NTH;
        if (i >= d.units) break;
        const int grp = i >= d.plane ? 1 : 0, q = i - grp * d.plane;
        const uint32_t s = src + 4u * static_cast<uint32_t>(grp * 4 * d.cpr + q);
        uint32_t v[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) v[e] = tf32_round(__uint_as_float(lds32(s + 4u * e * d.cpr)));
        sts128(dst + 16u * i, v[0], v[1], v[2], v[3]);
      }
    }
  };

  float acc[MS][NP / 2];
  zero_acc(acc);

  // Prologue: weights of chunks 0 and 1, raw stages of chunks 0..stages - 1, chunk 0 transposed.
  __syncthreads();  // the mbarriers' init, seen by every thread before any waits on them
  load_weights(0);
  load_weights(1);
  for (int s = 0; s < d.stages; ++s) load_raw(s, s);
  cp_wait_upto<3>(d.stages - 1);
  __syncthreads();
  transpose(0, 0, 0, d.units);
  fence_proxy_async();
  __syncthreads();

  const int kk = d.kh * d.kw;
  const uint32_t group_bytes = 16u * d.plane;
  // This warpgroup's first row and the first tap (0, 0) in the pixel-major buffer, in 16-byte units.
  const uint32_t base_off = static_cast<uint32_t>(wgi * MS * d.rp + shift);
  const uint32_t tap00 = static_cast<uint32_t>((d.kh - 1) * d.dh * d.rp + (d.kw - 1) * d.dw);
  const uint32_t row_back = static_cast<uint32_t>(d.dh * d.rp - (d.kw - 1) * d.dw);  // tap (kh, KW-1) to (kh+1, 0)
  int kc = 0, t = 0, kwi = 0, st = 0;  // st: chunk kc's raw stage
  uint32_t toff = tap00, a_s = 0;
  uint64_t bdesc = 0;
  auto step = [&](uint32_t(&a)[4]) -> bool {
    if (kc >= d.chunks) return false;
    if (t == 0) {
      load_weights(kc + 1 < d.chunks && kc >= 1 ? kc + 1 : d.chunks);  // chunk 1 went in the prologue
      load_raw(kc + d.stages, st);
      mbar_wait(&wbar[kc & 1], (kc >> 1) & 1);
      a_s = w_s + 4u * (kc & 1) * d.w_words + 16u * (tid & 127);
      bdesc = halo_desc(t_s + 4u * (kc & 1) * (8 * d.plane), group_bytes) + base_off;
      toff = tap00;
      kwi = 0;
    }
    lds128(a, a_s + 4u * kTapWords * t);
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < MS; ++j) wg::WgmmaRs<Op, NP>::run(acc[j], a, bdesc + toff + j * d.rp, 1);
    wgmma_commit();
    if (t == 0) {
      wgmma_wait<1>();  // this warpgroup's chunk kc - 1 retired
      cp_wait_upto<3>(d.stages - 1);  // chunk kc + 1's raw halo landed
      __syncthreads();
      if (kk == 1 && kc + 1 < d.chunks) transpose(kc + 1, st + 1 == d.stages ? 0 : st + 1, 0, d.units);
    } else {
      // One slice: each slice's setup cost as much as its few ldmatrix/stmatrix pairs (profile of v17a).
      if (t == 1 && kc + 1 < d.chunks) transpose(kc + 1, st + 1 == d.stages ? 0 : st + 1, 0, d.units);
      wgmma_wait<1>();
    }
    if (++t == kk) {
      fence_proxy_async();  // the pixel-major copy of chunk kc + 1, written by st.shared, read by wgmma
      __syncthreads();
      t = 0;
      ++kc;
      st = st + 1 == d.stages ? 0 : st + 1;
    } else if (++kwi == d.kw) {
      kwi = 0;
      toff -= row_back;
    } else {
      toff -= d.dw;
    }
    return true;
  };
  uint32_t a0[4], a1[4];
  while (step(a0) && step(a1)) {
  }
  wgmma_wait<0>();
#pragma unroll
  for (int j = 0; j < MS; ++j) fence_regs(acc[j]);
  cp_async_wait<0>();

  // Accumulators: register 4c + 2h + e of row j is (channel 16 wq + gq + 8h, pixel 8c + 2tq + e): two adjacent
  // pixels of one channel, one paired store.
#pragma unroll
  for (int j = 0; j < MS; ++j) {
    const int oh = oh0 + wgi * MS + j;
    if (oh >= d.hout) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int co = cot * kBM + 16 * wq + gq + 8 * h;
      if (co >= d.cout_g) continue;
      const int64_t oc = int64_t(g) * d.cout_g + co;
      const float bv = bias != nullptr ? static_cast<float>(bias[oc]) : 0.f;
      T* yr = y + ((int64_t(img) * d.cout + oc) * d.hout + oh) * d.wout;
#pragma unroll
      for (int c = 0; c < NP / 8; ++c) {
        const int ow = ow0 + 8 * c + 2 * tq;
        const float p0 = acc[j][4 * c + 2 * h] + bv, p1 = acc[j][4 * c + 2 * h + 1] + bv;
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

// v18: the same GEMM, warp-specialized and persistent, both operands by descriptor. v17's warps spent ~6000
// scalar instructions a block against 72 wgmma, and each tap waited on the one before (its A registers). Here
// warpgroup 0 is the producer: it issues the raw halo's cp.async ring, the weights' bulk copies and the transposes
// into `nb` pixel-major buffers; warpgroups 1..G issue a chunk's wgmma back to back (A, the tap's weights, K-major
// in shared memory; B as in v17) and wait once a chunk. Blocks draw tiles from a counter (v28), and the producer fills
// the next tile's buffers while the consumers finish and store this one.
//
// Ordering: full[b] completes when the 128 producer threads have written buffer b (each fences its generic writes
// to the async proxy, then arrives) and its weights' bulk copy landed (one more arrival, with the bytes); empty[b]
// when every consumer warp has retired the wgmma that read it (lane 0 arrives after the wait that retires them).
// The raw ring is the producer's own: a named barrier a chunk finds every producer thread's copies of chunk i landed
// and every transpose of chunk i - 1 (whose stage the next copies overwrite) done.
//
// PP (ping-pong, two consumer warpgroups): a tile is one warpgroup's MS rows, and the two take the block's tiles in
// turn, so that one stores a tile while the other runs its mainloop (without it both store at once and the tensor
// pipe idles through every epilogue). The producer's sequence is unchanged; each chunk has one consumer, so empty[b]
// counts 4 arrivals. The mainloops run in tile order: a warpgroup starts one (named barrier 2 + wgi) once the other
// has waited on every chunk of the tile before, so when it waits on full[b] for position p, position p - nb has
// been produced, and the barrier's parity names p alone.
//
// RA (v25, ping-pong, channels as M): each tap's weights as wgmma's A from registers, loaded once for the warpgroup's
// MS rows where a descriptor reads them from shared memory once a row; two register sets, a commit group a tap.
// Those are generic-proxy reads of a buffer the next bulk copy overwrites, so every consumer thread fences and
// arrives (empty[b] counts 128).
//
// NC > 0 (v24): channels as N, NC a tile (32); the operands swap. A is the pixel-major halo (M = 64 pixels of a row,
// the same descriptor v18 gives B), B the tap's weights (N = NC channels, K-major as v18's A). At 32 or fewer channels
// a group v18 pads them to wgmma's M of 64, half of every product and of its weight reads zeros.
template <typename T, int MS, int G, int NP, bool PP, int NC, bool RA>
__global__ void __launch_bounds__((G + 1) * 128, 1)
    convt_dws_kernel(const DwgGeom d, const T* __restrict__ x, const uint32_t* __restrict__ wp,
                     const T* __restrict__ bias, T* __restrict__ y, bool pair, unsigned tiles,
                     int* __restrict__ tickets) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(!PP || G == 2, "ping-pong alternates two consumer warpgroups (tiles k % 2, named barriers 2 and 3)");
  constexpr bool SW = NC > 0;
  static_assert(!SW || NP % 64 == 0, "channels as N: 64-pixel m-tiles");
  static_assert(!RA || !SW, "weights from registers: channels as M");
  constexpr int CH = Chunk<T>::kCh, V = Chunk<T>::kV;
  // Accumulators a row: NP pixels x 64 channels over 128 threads, or with SW NP pixels x NC channels.
  constexpr int MT = NP / 64, ACC = SW ? MT * NC / 2 : NP / 2;
  // v26: past ~160 accumulators a thread (4 rows x 88 columns: 176) the consumers need more than the launch bound's
  // 168 registers. The producer gives up 96 a thread (168 -> 72), each consumer thread takes 48 (168 -> 216): 128 x 72
  // + 256 x 216 is the block's 384 x 168.
  constexpr bool kRegs = MS * ACC > 160;
  static_assert(!kRegs || G == 2, "the register split assumes one producer and two consumer warpgroups");
  using Op = typename wg::OpFor<T>::type;
  extern __shared__ __align__(128) uint32_t smem[];
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);
  uint64_t* empty = full + 4;  // nb <= 4
  // v28, tickets (a zeroed counter): a block's tile k is slot[k % 16]. Its first two are fixed (blockIdx.x and gridDim.x
  // + blockIdx.x, known before any barrier); the producer draws each later one from the counter while it issues the
  // tile before's first chunk, so the tiles in flight stay about gridDim.x consecutive ones (a static walk lets blocks
  // drift apart, and vertically adjacent tiles then re-read their shared halo rows from DRAM). Every reader of slot
  // k + 1 has passed a named barrier after that issue (the producer) or waited on a full[] phase that comes after it
  // (the consumers: all of tile k - 1's chunks, `stages - 1` or more past it). The producer runs at most nb + stages
  // chunks ahead of the consumers, so 16 slots outlive every read.
  int* slot = reinterpret_cast<int*>(smem + 16);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (tid == 0) {
    slot[0] = static_cast<int>(blockIdx.x);
    slot[1] = static_cast<int>(gridDim.x + blockIdx.x);
    for (int b = 0; b < d.nb; ++b) {
      mbar_init(&full[b], 129);
      mbar_init(&empty[b], RA ? 128 : PP ? 4 : 4 * G);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  const uint32_t t_s = smem_addr(smem + d.t_word), w_s = smem_addr(smem + d.w_word);
  auto ticket = [&](int k) { return static_cast<unsigned>(slot[k & 15]); };
  auto valid = [&](int k) { return ticket(k) < tiles; };

  // Tile k of this block: channel tiles fastest, as in v17.
  struct At {
    int cot, img, g, oh0, ow0, ca, shift;
  };
  auto tile_at = [&](int k) {
    unsigned blk = ticket(k);
    At a;
    a.cot = static_cast<int>(blk % d.co_tiles);
    blk /= d.co_tiles;
    const int twi = static_cast<int>(blk % d.tw_tiles);
    blk /= d.tw_tiles;
    const int thi = static_cast<int>(blk % d.th_tiles);
    blk /= d.th_tiles;
    a.img = static_cast<int>(blk % d.n);
    a.g = static_cast<int>(blk / d.n);
    a.oh0 = thi * (PP ? 1 : G) * MS;
    a.ow0 = twi * NP;
    const int c0 = a.ow0 + d.pw - (d.kw - 1) * d.dw;
    a.ca = c0 >= 0 ? c0 / V * V : -((V - 1 - c0) / V) * V;  // floor to a copy boundary
    a.shift = c0 - a.ca;
    return a;
  };

  if (warp < 4) {
    // Producer.
    if constexpr (kRegs) setmaxnreg_dec<72>();
    const int copies = d.hr * d.rpv;
    const uint32_t raw_s = smem_addr(smem + d.raw_word);
    int ik = 0, ic = 0, ih0 = 0, ca = 0;  // the next chunk to issue: tile, chunk; the tile's halo origin
    const T* x_tile = x;
    // Chunk (ik, ic)'s raw halo into stage st: a thread a 16-byte copy position, every channel of the chunk
    // (zero-filled outside the image and past the group's channels).
    auto issue = [&](int st) {
      if (valid(ik)) {
        if (ic == 0) {
          if (tid == 0 && ik >= 1)
            slot[(ik + 1) & 15] = static_cast<int>(2 * gridDim.x + atomicAdd(tickets, 1));
          const At a = tile_at(ik);
          ih0 = a.oh0 + d.ph - (d.kh - 1) * d.dh;
          ca = a.ca;
          x_tile = x + (int64_t(a.img) * d.cin + int64_t(a.g) * d.cin_g) * d.hw_in;
        }
        const int nch = d.cin_g - ic * CH;
        const T* x_chunk = x_tile + int64_t(ic) * CH * d.hw_in;
        const uint32_t cstride = static_cast<uint32_t>(d.cpr * sizeof(T));
        for (int j = tid; j < copies; j += 128) {
          const int row = j / d.rpv, col = j - row * d.rpv;
          const int ih = ih0 + row, iw = ca + col * V;
          const bool in = ih >= 0 && ih < d.hin && iw >= 0 && iw < d.win;
          // Outside the image: every copy zero-filled from a valid address that is not read.
          const T* src = in ? x_chunk + ih * d.win + iw : x;
          const int64_t step = in ? d.hw_in : 0;
          const int bytes = in ? 16 : 0;
          uint32_t dst = raw_s + 4u * st * d.raw_words + 16u * j;
          if (nch >= CH) {
#pragma unroll
            for (int ch = 0; ch < CH; ++ch, dst += cstride, src += step) cp_async16_n(dst, src, bytes);
          } else {
            for (int ch = 0; ch < CH; ++ch, dst += cstride) {
              cp_async16_n(dst, src, ch < nch ? bytes : 0);
              if (ch + 1 < nch) src += step;
            }
          }
        }
        if (++ic == d.chunks) {
          ic = 0;
          ++ik;
        }
      }
      cp_async_commit();
    };
    int ist = 0;
    for (int s = 0; s + 1 < d.stages; ++s) {
      issue(ist);
      ist = ist + 1 == d.stages ? 0 : ist + 1;
      asm volatile("bar.sync 1, 128;\n" ::: "memory");  // a ticket written in this issue, read by the next
    }
    int tk = 0, tc = 0, st = 0;
    RingPos ring;
    const uint32_t* w_tile = nullptr;
    while (valid(tk)) {
      const int b = ring.b;
      cp_wait_upto<3>(d.stages - 2);  // this thread's copies of the chunk transposed next landed
      asm volatile("bar.sync 1, 128;\n" ::: "memory");
      issue(ist);
      ist = ist + 1 == d.stages ? 0 : ist + 1;
      if (tc == 0) {
        const At a = tile_at(tk);
        w_tile = wp + (int64_t(a.g) * d.co_tiles + a.cot) * d.chunks * int64_t(d.w_words);
      }
      mbar_wait(&empty[b], ring.parity() ^ 1);  // the consumers retired chunk i - nb (a fresh barrier passes parity 1)
      if (tid == 0) {
        mbar_expect_tx(&full[b], d.w_words * 4);
        bulk_copy(w_s + 4u * b * d.w_words, w_tile + int64_t(tc) * d.w_words, d.w_words * 4, &full[b]);
      }
      // Half types: ldmatrix.trans reads 8 channels x 8 pixels four times (a lane the row of its matrix lane / 8,
      // channel lane % 8), stmatrix writes them back as 8 pixels x 8 channels; a warp 32 pixels a step. fp32: a
      // thread a pixel, four channels gathered into 16 bytes, TF32-rounded.
      const uint32_t src = raw_s + 4u * st * d.raw_words, dst = t_s + 4u * b * (8 * d.plane);
      // Four steps in flight, then two, then one: the producer is one warp a scheduler, so its loads' latency is
      // hidden only by its own independent loads (ncu of v18 on kb57 TF32: the consumers waited on full[b] 15% of
      // their time, the producer's samples mostly shared-load scoreboards in these loops).
      if constexpr (Chunk<T>::kHalf) {
        const int mi = lane >> 3, r = lane & 7;
#pragma unroll
        for (int grp = 0; grp < 2; ++grp) {
          uint32_t s = src + 2u * static_cast<uint32_t>((8 * grp + r) * d.cpr + 8 * mi + 32 * warp);
          uint32_t t = dst + 16u * static_cast<uint32_t>(grp * d.plane + 8 * mi + r + 32 * warp);
          int q = 32 * warp;
          for (; q + 384 < d.plane; q += 512, s += 1024, t += 8192) {
            uint32_t v[4][4];
#pragma unroll
            for (int e = 0; e < 4; ++e) ldsm_x4_trans(v[e], s + 256 * e);
#pragma unroll
            for (int e = 0; e < 4; ++e) stsm_x4(t + 2048 * e, v[e]);
          }
          for (; q < d.plane; q += 128, s += 256, t += 2048) {
            uint32_t v[4];
            ldsm_x4_trans(v, s);
            stsm_x4(t, v);
          }
        }
      } else {
        // A thread a pixel and all 8 channels of the chunk: two 16-byte rows, one a channel group.
        const uint32_t cs = 4u * d.cpr, gs = 16u * d.plane;
        uint32_t s = src + 4u * tid, t = dst + 16u * tid;
        int q = tid;
        auto pixels = [&](auto n) {
          constexpr int N = decltype(n)::value;
          uint32_t v[N][8];
#pragma unroll
          for (int e = 0; e < 8 * N; ++e) v[e >> 3][e & 7] = lds32(s + (e & 7) * cs + (e >> 3) * 512);
#pragma unroll
          for (int e = 0; e < 8 * N; ++e) v[e >> 3][e & 7] = tf32_round(__uint_as_float(v[e >> 3][e & 7]));
#pragma unroll
          for (int e = 0; e < N; ++e) {
            sts128(t + 2048 * e, v[e][0], v[e][1], v[e][2], v[e][3]);
            sts128(t + 2048 * e + gs, v[e][4], v[e][5], v[e][6], v[e][7]);
          }
          q += 128 * N;
          s += 512 * N;
          t += 2048 * N;
        };
        while (q + 384 < d.plane) pixels(std::integral_constant<int, 4>{});
        if (q + 128 < d.plane) pixels(std::integral_constant<int, 2>{});
        if (q < d.plane) pixels(std::integral_constant<int, 1>{});
      }
      fence_proxy_async();  // this thread's st.shared, read next by wgmma
      mbar_arrive(&full[b]);
      st = st + 1 == d.stages ? 0 : st + 1;
      ring.next(d.nb);
      if (++tc == d.chunks) {
        tc = 0;
        ++tk;
      }
    }
    cp_async_wait<0>();
    return;
  }

  if constexpr (kRegs) setmaxnreg_inc<216>();
  // Consumers: warpgroup 1 + wgi holds rows wgi * MS.. of a tile. wgi comes through a shuffle so that the compiler
  // knows it is warp-uniform: the descriptors built from it then live in uniform registers (from threadIdx they were
  // per-thread 64-bit adds and R2UR moves, ~15 instructions a wgmma in the SASS).
  const int wgi = __shfl_sync(0xffffffffu, warp >> 2, 0) - 1, wq = warp & 3, gq = lane >> 2, tq = lane & 3;
  const int kk = d.kh * d.kw;
  const uint32_t group_bytes = 16u * d.plane;
  const uint32_t tap00 = static_cast<uint32_t>((d.kh - 1) * d.dh * d.rp + (d.kw - 1) * d.dw);
  const uint32_t row_back = static_cast<uint32_t>(d.dh * d.rp - (d.kw - 1) * d.dw);  // tap (kh, KW-1) to (kh+1, 0)
  float acc[MS][ACC];
  RingPos ring;
  for (int k = 0; valid(k); ++k) {
    if (PP && k % 2 != wgi) {  // the other warpgroup's tile: its chunks' positions in the ring
      for (int c = 0; c < d.chunks; ++c) ring.next(d.nb);
      continue;
    }
    if (PP && k > 0) asm volatile("bar.sync %0, 256;\n" ::"r"(2 + wgi) : "memory");
    const At a = tile_at(k);
    const uint32_t base_off = static_cast<uint32_t>((PP ? 0 : wgi * MS * d.rp) + a.shift);
    int prev = -1;  // the buffer of the chunk before, released once its wgmma retire
    for (int kc = 0; kc < d.chunks; ++kc) {
      const int b = ring.b;
      mbar_wait(&full[b], ring.parity());
      // Weights: k halves 16 bm bytes apart. Halo: channel groups group_bytes apart, a pixel 16 bytes.
      const uint32_t alo = desc_lo(w_s + 4u * b * d.w_words, 16 * d.bm);
      const uint32_t blo = desc_lo(t_s + 4u * b * (8 * d.plane), group_bytes) + base_off;
      uint32_t toff = tap00;  // the tap's offset into the halo: taps run from (KH-1, KW-1) back to (0, 0)
      int kwi = 0;
      auto next_tap = [&] {
        if (++kwi == d.kw) {
          kwi = 0;
          toff -= row_back;
        } else {
          toff -= d.dw;
        }
      };
      if constexpr (RA) {
        // A tap's weights in registers, two sets: the tap's MS wgmma are a commit group, and the wait after it retires
        // the tap before, whose set the next tap's load overwrites. After the chunk's first tap that wait has retired
        // the chunk before, so its buffer is released there.
        const uint32_t a_s = w_s + 4u * b * d.w_words + 16u * static_cast<uint32_t>(tid & 127);
        auto tap = [&](uint32_t (&a)[4], int t) {
          lds128(a, a_s + uint32_t(t) * (4 * kTapWords));
          wgmma_fence();
          const int scale = kc != 0 || t != 0 ? 1 : 0;
#pragma unroll
          for (int j = 0; j < MS; ++j) wg::WgmmaRs<Op, NP>::run(acc[j], a, desc_of(blo + toff + j * d.rp), scale);
          wgmma_commit();
          wgmma_wait<1>();
          if (t == 0 && prev >= 0) release_loads(&empty[prev]);
          next_tap();
        };
        uint32_t a0[4], a1[4];
        for (int t = 0; t < kk; t += 2) {
          tap(a0, t);
          if (t + 1 < kk) tap(a1, t + 1);
        }
      } else {
        wgmma_fence();
        for (int t = 0; t < kk; ++t) {
          const int scale = kc != 0 || t != 0 ? 1 : 0;  // a tile's first tap overwrites the accumulators
          const uint64_t wdesc = desc_of(alo + uint32_t(t * (4 * d.tap_words / 16)));
#pragma unroll
          for (int j = 0; j < MS; ++j) {
            if constexpr (SW) {
#pragma unroll
              for (int u = 0; u < MT; ++u) {
                wg::Wgmma<Op, NC>::run(*reinterpret_cast<float(*)[NC / 2]>(&acc[j][NC / 2 * u]),
                                       desc_of(blo + toff + j * d.rp + 64 * u), wdesc, scale);
              }
            } else {
              wg::Wgmma<Op, NP>::run(acc[j], wdesc, desc_of(blo + toff + j * d.rp), scale);
            }
          }
          next_tap();
        }
        wgmma_commit();
        wgmma_wait<1>();  // the chunk before retired
        if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);
      }
      prev = b;
      ring.next(d.nb);
    }
    if (PP && valid(k + 1)) asm volatile("bar.arrive %0, 256;\n" ::"r"(3 - wgi) : "memory");
    wgmma_wait<0>();
#pragma unroll
    for (int j = 0; j < MS; ++j) fence_regs(acc[j]);
    if constexpr (RA) {
      release_loads(&empty[prev]);
    } else if (lane == 0) {
      mbar_arrive(&empty[prev]);
    }
    if constexpr (SW) {
      store_rows_sw<T, MS, NP, NC>(d, a.img, a.g, a.cot, a.oh0 + (PP ? 0 : wgi * MS), a.ow0, acc, bias, y, pair, wq,
                                   gq, tq);
    } else {
      // Register 4c + 2h + e of row j is (channel 16 wq + gq + 8h, pixel 8c + 2tq + e), as in v17. A row's pairs are
      // all converted before any is stored: stores that each reuse one register wait for the store before to read it
      // (ncu of the first v18: a third of the warps' samples on that chain).
#pragma unroll
      for (int j = 0; j < MS; ++j) {
        const int oh = a.oh0 + (PP ? 0 : wgi * MS) + j;
        if (oh >= d.hout) continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int co = a.cot * d.bm + 16 * wq + gq + 8 * h;
          if (co >= d.cout_g) continue;
          const int64_t oc = int64_t(a.g) * d.cout_g + co;
          const float bv = bias != nullptr ? static_cast<float>(bias[oc]) : 0.f;
          T* yr = y + ((int64_t(a.img) * d.cout + oc) * d.hout + oh) * d.wout + a.ow0 + 2 * tq;
          if (pair && a.ow0 + NP <= d.wout) {
            uint32_t pk[NP / 8][sizeof(T) == 2 ? 1 : 2];
#pragma unroll
            for (int c = 0; c < NP / 8; ++c) {
              pack_pair<T>(pk[c], acc[j][4 * c + 2 * h] + bv, acc[j][4 * c + 2 * h + 1] + bv);
            }
#pragma unroll
            for (int c = 0; c < NP / 8; ++c) store_pair<T>(yr + 8 * c, pk[c]);
          } else {
#pragma unroll
            for (int c = 0; c < NP / 8; ++c) {
              const int ow = a.ow0 + 8 * c + 2 * tq;
              const float p0 = acc[j][4 * c + 2 * h] + bv, p1 = acc[j][4 * c + 2 * h + 1] + bv;
              if (pair && ow + 1 < d.wout) {
                store2(yr + 8 * c, p0, p1);
              } else {
                if (ow < d.wout) yr[8 * c] = static_cast<T>(p0);
                if (ow + 1 < d.wout) yr[8 * c + 1] = static_cast<T>(p1);
              }
            }
          }
        }
      }
    }
  }
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
}

int round_up(int a, int b) { return (a + b - 1) / b * b; }

// Two rows a warpgroup, two warpgroups a block, 128 columns.
DwgTile pick(DwgTile t) {
  if (t.rows == 0) t.rows = 2;
  if (t.groups == 0) t.groups = 2;
  if (t.cols == 0) t.cols = t.rows == 4 || (t.groups == 4 && t.rows == 2) ? 64 : 128;
  return t;
}

// Blocks an SM the tile is built for (its registers): 64-column two-row tiles fit two.
int blocks_per_sm(DwgTile t) { return !t.ws && t.cols == 64 && t.rows <= 2 && t.groups == 2 ? 2 : 1; }

DwgGeom geometry(const ConvTParams& p, int elem, DwgTile t, int smem_limit) {
  const int V = 16 / elem;
  DwgGeom d{};
  static_cast<StrideOneDims&>(d) = StrideOneDims::of(p);
  const int rows = t.pp ? t.rows : t.rows * t.groups;  // a tile's output rows
  d.hr = rows + (d.kh - 1) * d.dh;
  d.rp = round_up(V - 1 + t.cols + (d.kw - 1) * d.dw, V);
  d.rpv = d.rp / V;
  d.plane = round_up(d.hr * d.rp, 32);
  d.cpr = d.plane + (elem == 2 ? 8 : 0);
  d.raw_words = 8 * d.cpr;  // 32 bytes of channels a pixel: 16 half or 8 fp32
  d.bm = t.nc > 0 ? t.nc : kBM;
  d.tap_words = 8 * d.bm;
  d.w_words = d.kh * d.kw * d.tap_words;
  const int table = round_up(d.hr * d.rpv, 4);
  const int b = blocks_per_sm(t);  // each block an SM also holds 1 KB the hardware reserves
  const int budget = (b == 1 ? smem_limit : (smem_limit + 1024) / b - 1024) / 4;  // words
  // Per block: the mbarriers (v17: two, 32 bytes; v18: two rings of up to four, 64 bytes), nb pixel-major buffers,
  // nb weight buffers, the raw stages, the table (v17). v18 takes the deepest of raw ring and buffers that fits.
  d.t_word = t.ws ? 32 : 8;  // ws: 8 mbarriers, 16 ticket slots
  auto size = [&](int nb, int stages) {
    return d.t_word + nb * (8 * d.plane + d.w_words) + stages * d.raw_words + (t.ws ? 0 : table);
  };
  if (t.ws) {
    // Three buffers before three raw stages (v26): a third pixel-major and weight buffer lets the producer run a chunk
    // further ahead of the consumers, a third raw stage only hides more of a copy's latency. Where only one fits,
    // GPU time alone on an H200 (bench.gpu_time, session 33, ms): kb65 dwp4w TF32 1.19 -> 1.00, fp16 0.63 -> 0.54;
    // kb57 dws4w TF32 2.90 -> 2.74 (fp16 1.87 -> 1.98, where the heuristic takes dwr4).
    constexpr int kDepths[][2] = {{3, 4}, {3, 3}, {3, 2}, {2, 3}, {2, 2}};
    d.nb = 2;
    d.stages = 2;
    for (const auto& nd : kDepths) {
      if (size(nd[0], nd[1]) <= budget) {
        d.nb = nd[0];
        d.stages = nd[1];
        break;
      }
    }
  } else {
    d.nb = 2;
    d.stages = 4;
    while (d.stages > 2 && size(2, d.stages) > budget) --d.stages;
  }
  d.w_word = d.t_word + d.nb * 8 * d.plane;
  d.raw_word = d.w_word + d.nb * d.w_words;
  d.table_word = d.raw_word + d.stages * d.raw_words;
  d.smem_bytes = size(d.nb, d.stages) * 4;
  d.units = elem == 2 ? 2 * d.plane / 32 : 2 * d.plane;  // half types: a unit a warp; fp32: a unit a thread
  d.chunks = (d.cin_g + (elem == 2 ? 16 : 8) - 1) / (elem == 2 ? 16 : 8);
  d.co_tiles = (d.cout_g + d.bm - 1) / d.bm;
  d.th_tiles = (d.hout + rows - 1) / rows;
  d.tw_tiles = (d.wout + t.cols - 1) / t.cols;
  return d;
}

template <typename T>
at::Tensor pack_weights(const ConvTParams& p, const DwgGeom& d, const at::Tensor& x, const at::Tensor& w,
                        bool kmajor, cudaStream_t stream) {
  const int64_t words = p.groups * int64_t(d.co_tiles) * d.chunks * d.w_words;
  at::Tensor packed = at::empty({words}, x.options().dtype(at::kInt));
  const unsigned pack_blocks = static_cast<unsigned>(std::min<int64_t>((words + 255) / 256, 4096));
  dwg_pack_kernel<T><<<pack_blocks, 256, 0, stream>>>(
      d, w.const_data_ptr<T>(), reinterpret_cast<uint32_t*>(packed.mutable_data_ptr<int>()), words, kmajor);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return packed;
}

template <typename T, int MS, int G, int NP, int MINB>
void launch_typed(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                  at::Tensor& out, cudaStream_t stream) {
  const DwgGeom d = geometry(p, static_cast<int>(sizeof(T)), {MS, G, NP}, max_smem_optin(x.get_device()));
  const int64_t blocks = p.groups * int64_t(d.co_tiles) * d.n * d.th_tiles * d.tw_tiles;
  if (blocks == 0) return;
  const at::Tensor packed = pack_weights<T>(p, d, x, w, false, stream);
  const uint32_t* wp = reinterpret_cast<const uint32_t*>(packed.const_data_ptr<int>());
  T* y = out.mutable_data_ptr<T>();
  const bool pair = p.Wout % 2 == 0 && reinterpret_cast<uintptr_t>(y) % (2 * sizeof(T)) == 0;
  auto kernel = convt_dwg_kernel<T, MS, G, NP, MINB>;
  allow_dynamic_smem(kernel, d.smem_bytes);
  kernel<<<static_cast<unsigned>(blocks), G * 128, d.smem_bytes, stream>>>(
      d, x.const_data_ptr<T>(), wp, b.defined() ? b.const_data_ptr<T>() : nullptr, y, pair);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// v18: one block an SM; v28: each drawing its tiles from a counter (tickets).
template <typename T, int MS, int G, int NP, bool PP, int NC = 0, bool RA = false>
void launch_ws(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
               cudaStream_t stream) {
  const int dev = x.get_device();
  const DwgGeom d = geometry(p, static_cast<int>(sizeof(T)), {MS, G, NP, true, PP, NC, RA}, max_smem_optin(dev));
  const int64_t tiles = p.groups * int64_t(d.co_tiles) * d.n * d.th_tiles * d.tw_tiles;
  if (tiles == 0) return;
  const at::Tensor packed = pack_weights<T>(p, d, x, w, !RA, stream);
  T* y = out.mutable_data_ptr<T>();
  const bool pair = p.Wout % 2 == 0 && reinterpret_cast<uintptr_t>(y) % (2 * sizeof(T)) == 0;
  const int sms = sm_count(dev);
  auto kernel = convt_dws_kernel<T, MS, G, NP, PP, NC, RA>;
  allow_dynamic_smem(kernel, d.smem_bytes);
  // The tickets' counter (see the kernel), zeroed a launch.
  at::Tensor counter = at::zeros({1}, x.options().dtype(at::kInt));
  kernel<<<static_cast<unsigned>(std::min<int64_t>(tiles, sms)), (G + 1) * 128, d.smem_bytes, stream>>>(
      d, x.const_data_ptr<T>(), reinterpret_cast<const uint32_t*>(packed.const_data_ptr<int>()),
      b.defined() ? b.const_data_ptr<T>() : nullptr, y, pair, static_cast<unsigned>(tiles),
      counter.mutable_data_ptr<int>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T>
void launch_tile(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 DwgTile t, cudaStream_t stream) {
  if (t.nc == 32) {
    if (t.pp) {
      launch_ws<T, 8, 2, 64, true, 32>(p, x, w, b, out, stream);
    } else {
      launch_ws<T, 8, 2, 64, false, 32>(p, x, w, b, out, stream);
    }
    return;
  }
  if (t.ra) {
    launch_ws<T, 4, 2, 64, true, 0, true>(p, x, w, b, out, stream);
    return;
  }
  if (t.ws) {
    if (t.cols == 88) {
      if (t.rows == 4 && t.pp) {
        launch_ws<T, 4, 2, 88, true>(p, x, w, b, out, stream);
      } else if (t.rows == 4) {
        launch_ws<T, 4, 2, 88, false>(p, x, w, b, out, stream);
      } else if (t.pp) {
        launch_ws<T, 3, 2, 88, true>(p, x, w, b, out, stream);
      } else {
        launch_ws<T, 3, 2, 88, false>(p, x, w, b, out, stream);
      }
    } else if (t.pp) {
      launch_ws<T, 4, 2, 64, true>(p, x, w, b, out, stream);
    } else if (t.rows == 4) {
      launch_ws<T, 4, 2, 64, false>(p, x, w, b, out, stream);
    } else if (t.rows == 1) {
      launch_ws<T, 1, 3, 128, false>(p, x, w, b, out, stream);
    } else if (t.groups == 3) {
      launch_ws<T, 2, 3, 64, false>(p, x, w, b, out, stream);
    } else {
      launch_ws<T, 2, 2, 128, false>(p, x, w, b, out, stream);
    }
    return;
  }
  if (t.groups == 3) {
    launch_typed<T, 2, 3, 128, 1>(p, x, w, b, out, stream);
  } else if (t.groups == 4 && t.rows == 1) {
    launch_typed<T, 1, 4, 128, 1>(p, x, w, b, out, stream);
  } else if (t.groups == 4) {
    launch_typed<T, 2, 4, 64, 1>(p, x, w, b, out, stream);
  } else if (t.rows == 1) {
    launch_typed<T, 1, 2, 128, 1>(p, x, w, b, out, stream);
  } else if (t.rows == 4) {
    launch_typed<T, 4, 2, 64, 1>(p, x, w, b, out, stream);
  } else if (t.cols == 64) {
    launch_typed<T, 2, 2, 64, 2>(p, x, w, b, out, stream);
  } else {
    launch_typed<T, 2, 2, 128, 1>(p, x, w, b, out, stream);
  }
}

bool tile_known(DwgTile t) {
  if (t.nc == 32) return t.ws && t.rows == 8 && t.groups == 2 && t.cols == 64;
  if (t.nc != 0) return false;
  if (t.ra) return t.ws && t.pp && t.groups == 2 && t.rows == 4 && t.cols == 64;
  // also in ping-pong; 4 rows with setmaxnreg (v26)
  if (t.ws && (t.rows == 3 || t.rows == 4) && t.groups == 2 && t.cols == 88) return true;
  if (t.pp) return t.ws && t.rows == 4 && t.groups == 2 && t.cols == 64;
  if (t.ws) {
    return (t.rows == 2 && t.groups == 2 && t.cols == 128) || (t.rows == 4 && t.groups == 2 && t.cols == 64) ||
           (t.rows == 2 && t.groups == 3 && t.cols == 64) || (t.rows == 1 && t.groups == 3 && t.cols == 128);
  }
  if (t.groups == 3) return t.rows == 2 && t.cols == 128;
  if (t.groups == 4) return (t.rows == 1 && t.cols == 128) || (t.rows == 2 && t.cols == 64);
  if (t.groups != 2) return false;
  if (t.rows == 1) return t.cols == 128;
  if (t.rows == 4) return t.cols == 64;
  return t.rows == 2 && (t.cols == 64 || t.cols == 128);
}

}  // namespace

bool dwg_operands_ok(const ConvTParams& p, const at::Tensor& x, bool tf32) {
  const at::ScalarType dt = x.scalar_type();
  if (dt != at::kHalf && dt != at::kBFloat16 && !(dt == at::kFloat && tf32)) return false;
  if (p.sh != 1 || p.sw != 1) return false;
  const int V = 16 / static_cast<int>(x.element_size());
  const int64_t lim = int64_t(1) << 30;
  if (p.Win % V != 0 || reinterpret_cast<uintptr_t>(x.const_data_ptr()) % 16 != 0) return false;
  if (p.Hin * p.Win >= lim || p.Hout >= lim || p.Wout >= lim || p.Cin >= lim || p.Cout >= lim || p.N >= lim)
    return false;
  if (p.KH * p.dh >= 4096 || p.KW * p.dw >= 4096 || p.ph >= lim || p.pw >= lim) return false;
  return wg_available(x.get_device());
}

bool dwg_supports(const ConvTParams& p, const at::Tensor& x, bool tf32, DwgTile tile) {
  if (!dwg_operands_ok(p, x, tf32)) return false;
  const DwgTile t = pick(tile);
  if (!tile_known(t)) return false;
  const int limit = max_smem_optin(x.get_device());
  const DwgGeom d = geometry(p, static_cast<int>(x.element_size()), t, limit);
  if (d.smem_bytes > limit) return false;
  return p.groups * int64_t(d.co_tiles) * d.n * d.th_tiles * d.tw_tiles < (int64_t(1) << 31);
}

void launch_dwg(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                DwgTile tile, cudaStream_t stream) {
  const DwgTile t = pick(tile);
  CONVT_CHECK(tile_known(t), "convt: the wgmma dense kernel takes 2 warpgroups of 1 row x 128 columns, 2 x 64 or "
              "128, or 4 x 64; 3 of 2 x 128; or 4 of 1 x 128 or 2 x 64; warp-specialized, 2 of 3 x 88 or 4 x 88 "
              "(also in ping-pong), 2 of 4 x 64 in ping-pong with the weights from registers; with channels as N, 2 of "
              "8 x 64 (also in ping-pong); not ", t.groups, " of ", t.rows, " x ", t.cols);
  switch (x.scalar_type()) {
    case at::kFloat: launch_tile<float>(p, x, w, b, out, t, stream); break;
    case at::kHalf: launch_tile<at::Half>(p, x, w, b, out, t, stream); break;
    case at::kBFloat16: launch_tile<at::BFloat16>(p, x, w, b, out, t, stream); break;
    default: TORCH_CHECK(false, "convt: the wgmma dense kernel takes float32 (as TF32), float16 and bfloat16");
  }
}

}  // namespace convt
