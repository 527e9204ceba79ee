// The dense path (see convt_dense.h). With stride 1 output (oh, ow) takes tap (kh, kw) from input
// (oh + ph - kh * dh, ow + pw - kw * dw): every tap reaches every output, a plain shift. A block owns NW output rows
// x TW columns of one image and 16 x MT output channels; warp r owns row r, as MT m16 tiles of output channels
// (mma's M) x NT n8 tiles of columns (mma's N). Per chunk of input channels the block stages, by 16-byte cp.async
// into three buffers (two where three do not fit), the input halo its outputs read: rows oh0 + ph - (KH - 1) * dh onwards, columns from the
// 16-byte boundary at or left of ow0 + pw - (KW - 1) * dw (a shift s into the staged row). A tap's B fragment is
// then word (channel t, pixel g) of that halo moved by the tap's offset: one 32-bit load, any alignment, and with
// a channel pitch of 8 words past a multiple of 32 a warp's 32 loads hit 32 banks. Half types stage channels as
// they lie and interleave pairs into 32-bit words (m16n8k16's k pairs) once a chunk in shared memory. Weights come
// packed in A-fragment order: a lane's four words a tap are one 16-byte load (strict: high, then low, two).
#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "convt_dense.h"
#include "smem_attr.h"

namespace convt {
namespace {

#include "cp_async.cuh"
#include "mma_sync.cuh"
#include "store_pair.cuh"

struct DenseGeom : StrideOneDims {
  int hr, rp, rpv;      // halo rows, its row pitch in pixels (a whole number of copies), copies a row
  int cp;               // channel pitch of the halo the mma loads read, in words: 8 past a multiple of 32
  int cpr;              // channel pitch of the staged halo, in elements (fp32: cp; half types: hr * rp)
  int halo_words;       // a stage's halo, then its weights
  int w_slab;           // packed weight words a (group, channel tile, chunk)
  int stage_words;
  int stages;
  int table_word;       // where the copy table starts (after the stages and, for half types, the interleaved halo)
  int smem_bytes;       // the stages, the interleaved halo and the copy table
  int chunks, co_tiles, th_tiles, tw_tiles;
};

template <typename T>
struct Chunk {
  static constexpr bool kHalf = sizeof(T) == 2;
  static constexpr int kCh = kHalf ? 16 : 8;             // input channels a chunk: one mma k-step, 8 words
  static constexpr int kV = 16 / static_cast<int>(sizeof(T));  // elements a 16-byte copy
};

// The packed weights: [group][channel tile][chunk][tap][m tile][lane][WA words], a lane's A fragment (a0..a3: rows
// g, g+8 by k-words t, t+4) of output channels x the chunk's input channels, TF32-rounded in fp32 (strict: the
// four high words, then the four TF32 roundings of the rest), or k pairs of half types (the lower k in the low half).
template <typename T, bool kStrict, int MT>
__global__ void dense_pack_kernel(const DenseGeom d, const T* __restrict__ w, uint32_t* __restrict__ wp,
                                  int64_t slots) {
  constexpr int WA = kStrict ? 8 : 4, BCO = MT * 16, KC = Chunk<T>::kCh;
  const int kk = d.kh * d.kw;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < slots; i += int64_t(gridDim.x) * blockDim.x) {
    const int lane = static_cast<int>(i % 32);
    int64_t r = i / 32;
    const int mt = static_cast<int>(r % MT);
    r /= MT;
    const int tap = static_cast<int>(r % kk);
    r /= kk;
    const int kc = static_cast<int>(r % d.chunks);
    r /= d.chunks;
    const int cot = static_cast<int>(r % d.co_tiles);
    const int64_t g = r / d.co_tiles;
    uint32_t out[WA];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int co = cot * BCO + mt * 16 + (lane >> 2) + 8 * (e & 1);
      const int kword = (lane & 3) + 4 * (e >> 1);
      auto weight = [&](int ci) -> T {
        return ci < d.cin_g && co < d.cout_g ? w[((g * d.cin_g + ci) * d.cout_g + co) * kk + tap] : T(0);
      };
      if constexpr (Chunk<T>::kHalf) {
        const int ci = kc * KC + 2 * kword;
        const T lo = weight(ci), hi = weight(ci + 1);
        out[e] = uint32_t(reinterpret_cast<const uint16_t&>(lo)) | (uint32_t(reinterpret_cast<const uint16_t&>(hi)) << 16);
      } else {
        const float v = weight(kc * KC + kword);
        out[e] = tf32_round(v);
        if constexpr (kStrict) out[4 + e] = tf32_round(v - __uint_as_float(out[e]));
      }
    }
    uint4* dst = reinterpret_cast<uint4*>(wp + i * WA);
#pragma unroll
    for (int q = 0; q < WA / 4; ++q) dst[q] = make_uint4(out[4 * q], out[4 * q + 1], out[4 * q + 2], out[4 * q + 3]);
  }
}

// One chunk's taps into the warp's accumulators. hs: the halo as words [k-word][row][pixel], at this lane's
// (k-word t, pixel g) and the warp's row; ws: the chunk's packed weights at this lane.
template <typename T, bool kStrict, int MT>
__device__ __forceinline__ void mma_taps(float (&acc)[MT][16 / MT][4], const uint32_t* hs, const uint32_t* ws,
                                         const DenseGeom& d) {
  constexpr int NT = 16 / MT, WA = kStrict ? 8 : 4;
  using MmaT = std::conditional_t<std::is_same_v<T, float>, float, T>;
  const uint32_t* a_tap = ws;
  for (int kh = 0; kh < d.kh; ++kh) {
    const uint32_t* b_row = hs + (d.kh - 1 - kh) * d.dh * d.rp;
    for (int kw = 0; kw < d.kw; ++kw, a_tap += MT * 32 * WA) {
      const uint32_t* bp = b_row + (d.kw - 1 - kw) * d.dw;
      uint32_t a[MT][4], al[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const uint4 v = *reinterpret_cast<const uint4*>(a_tap + mt * 32 * WA);
        a[mt][0] = v.x, a[mt][1] = v.y, a[mt][2] = v.z, a[mt][3] = v.w;
        if constexpr (kStrict) {
          const uint4 l = *reinterpret_cast<const uint4*>(a_tap + mt * 32 * WA + 4);
          al[mt][0] = l.x, al[mt][1] = l.y, al[mt][2] = l.z, al[mt][3] = l.w;
        }
      }
#pragma unroll
      for (int nj = 0; nj < NT; ++nj) {
        uint32_t b[2], bl[2];
        b[0] = bp[nj * 8];
        b[1] = bp[4 * d.cp + nj * 8];
        if constexpr (std::is_same_v<T, float>) {
          const float v0 = __uint_as_float(b[0]), v1 = __uint_as_float(b[1]);
          b[0] = tf32_round(v0);
          b[1] = tf32_round(v1);
          if constexpr (kStrict) {
            bl[0] = tf32_round(v0 - __uint_as_float(b[0]));
            bl[1] = tf32_round(v1 - __uint_as_float(b[1]));
          }
        }
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          if constexpr (kStrict) {
            // 3xTF32, small products first (low x low is below fp32's precision). The tensor cores' fp32 sums do not
            // round to nearest: carried through a whole reduction (kb65: 64 channels x 21 taps) they read 9e-6
            // against float64. So each step's three products start from zero and join the sum with a rounded add.
            float s[4] = {0.f, 0.f, 0.f, 0.f};
            Mma<MmaT>::run(s, al[mt], b);
            Mma<MmaT>::run(s, a[mt], bl);
            Mma<MmaT>::run(s, a[mt], b);
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[mt][nj][e] += s[e];
          } else {
            Mma<MmaT>::run(acc[mt][nj], a[mt], b);
          }
        }
      }
    }
  }
}

template <typename T, bool kStrict, int MT, int NW>
__global__ void __launch_bounds__(NW * 32, NW == 8 && !kStrict ? 2 : 1)
    convt_dense_kernel(const DenseGeom d, const T* __restrict__ x, const uint32_t* __restrict__ wp,
                       const T* __restrict__ bias, T* __restrict__ y, bool pair) {
  constexpr int NT = 16 / MT, TW = NT * 8, BCO = MT * 16, NTH = NW * 32;
  constexpr int CH = Chunk<T>::kCh, V = Chunk<T>::kV;
  // Staging: warp w copies channel w % CH (and w + NW, ... where a chunk has more channels than warps), WPC warps
  // sharing a channel's copies.
  constexpr int CPW = CH > NW ? CH / NW : 1, WPC = NW > CH ? NW / CH : 1;
  extern __shared__ __align__(16) uint32_t smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  // Channel tiles fastest: the blocks that read one halo run together and share it through L2.
  unsigned blk = blockIdx.x;  // < 2^31 (dense_supports)
  const int cot = static_cast<int>(blk % d.co_tiles);
  blk /= d.co_tiles;
  const int twi = static_cast<int>(blk % d.tw_tiles);
  blk /= d.tw_tiles;
  const int thi = static_cast<int>(blk % d.th_tiles);
  blk /= d.th_tiles;
  const int img = static_cast<int>(blk % d.n);
  const int g = static_cast<int>(blk / d.n);
  const int oh0 = thi * NW, ow0 = twi * TW;
  const int ih0 = oh0 + d.ph - (d.kh - 1) * d.dh, c0 = ow0 + d.pw - (d.kw - 1) * d.dw;
  const int ca = c0 >= 0 ? c0 / V * V : -((V - 1 - c0) / V) * V;  // floor to a copy boundary
  const int shift = c0 - ca;

  // The halo's copies, the same for every channel and chunk: source offset in the input plane, or -1 for a
  // zero-filled copy (outside the image). Worked out once a block, into a table after the stages.
  const int plane = d.hr * d.rpv;
  int* src_tab = reinterpret_cast<int*>(smem + d.table_word);
  for (int j = tid; j < plane; j += NTH) {
    const int row = j / d.rpv, col = j - row * d.rpv;
    const int ih = ih0 + row, iw = ca + col * V;
    src_tab[j] = ih >= 0 && ih < d.hin && iw >= 0 && iw < d.win ? ih * d.win + iw : -1;
  }
  __syncthreads();
  const int wch = NW >= CH ? warp % CH : warp, wj = NW >= CH ? warp / CH : 0;
  const T* x_img = x + (int64_t(img) * d.cin + int64_t(g) * d.cin_g) * d.hw_in;
  const uint32_t* w_blk = wp + (int64_t(g) * d.co_tiles + cot) * d.chunks * int64_t(d.w_slab);
  auto load_stage = [&](int kc, int buf) {
    uint32_t* st = smem + buf * d.stage_words;
    T* halo = reinterpret_cast<T*>(st);
#pragma unroll
    for (int k = 0; k < CPW; ++k) {
      const int ch = wch + k * NW, ci = kc * CH + ch;
      const bool ch_ok = ci < d.cin_g;
      const T* src = x_img + int64_t(ch_ok ? ci : 0) * d.hw_in;
      T* dst = halo + ch * d.cpr;
      for (int j = lane + 32 * wj; j < plane; j += 32 * WPC) {
        const int off = src_tab[j];
        const bool ok = ch_ok && off >= 0;
        cp_async16_zfill(dst + j * V, ok ? src + off : x, ok);
      }
    }
    const uint32_t* wsrc = w_blk + int64_t(kc) * d.w_slab;
    uint32_t* wdst = st + d.halo_words;
    for (int c = tid * 4; c < d.w_slab; c += NTH * 4) cp_async16_zfill(wdst + c, wsrc + c, true);
  };

  float acc[MT][NT][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nj = 0; nj < NT; ++nj)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][nj][e] = 0.f;

  for (int s = 0; s < d.stages - 1; ++s) {
    if (s < d.chunks) load_stage(s, s);
    cp_async_commit();
  }
  const int gq = lane >> 2, tq = lane & 3;
  // This lane's B word: k-word tq, pixel gq of n-tile 0, in the warp's row, moved by the halo's shift.
  const int b_lane = tq * d.cp + warp * d.rp + shift + gq;
  for (int kc = 0; kc < d.chunks; ++kc) {
    if (d.stages == 3) {
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();  // chunk kc is in; every warp is past chunk kc - 1, whose buffer the next copies reuse
    const int nx = kc + d.stages - 1;
    if (nx < d.chunks) load_stage(nx, nx % d.stages);
    cp_async_commit();
    const uint32_t* st = smem + (kc % d.stages) * d.stage_words;
    const uint32_t* words = st;
    if constexpr (Chunk<T>::kHalf) {
      // Channel pairs into words: word (c2, pixel) = (channel 2 c2, channel 2 c2 + 1), four pixels a thread a step.
      uint32_t* wb = smem + d.stages * d.stage_words;
      const T* raw = reinterpret_cast<const T*>(st);
      const int c2 = warp % 8, quads = d.hr * d.rp / 4;
      const uint2* ev = reinterpret_cast<const uint2*>(raw + 2 * c2 * d.cpr);
      const uint2* od = reinterpret_cast<const uint2*>(raw + (2 * c2 + 1) * d.cpr);
      uint4* dst = reinterpret_cast<uint4*>(wb + c2 * d.cp);
      for (int q = lane + 32 * (warp / 8); q < quads; q += 32 * (NW / 8)) {
        const uint2 e = ev[q], o = od[q];
        dst[q] = make_uint4(__byte_perm(e.x, o.x, 0x5410), __byte_perm(e.x, o.x, 0x7632),
                            __byte_perm(e.y, o.y, 0x5410), __byte_perm(e.y, o.y, 0x7632));
      }
      __syncthreads();
      words = wb;
    }
    mma_taps<T, kStrict, MT>(acc, words + b_lane, st + d.halo_words + lane * (kStrict ? 8 : 4), d);
  }
  cp_async_wait<0>();

  const int oh = oh0 + warp;
  if (oh >= d.hout) return;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int co = cot * BCO + mt * 16 + gq + 8 * h;
      if (co >= d.cout_g) continue;
      const int64_t oc = int64_t(g) * d.cout_g + co;
      const float bv = bias != nullptr ? static_cast<float>(bias[oc]) : 0.f;
      T* yr = y + ((int64_t(img) * d.cout + oc) * d.hout + oh) * d.wout;
#pragma unroll
      for (int nj = 0; nj < NT; ++nj) {
        const int ow = ow0 + nj * 8 + 2 * tq;
        const float v0 = acc[mt][nj][2 * h] + bv, v1 = acc[mt][nj][2 * h + 1] + bv;
        if (pair && ow + 1 < d.wout) {
          store2(yr + ow, v0, v1);
        } else {
          if (ow < d.wout) yr[ow] = static_cast<T>(v0);
          if (ow + 1 < d.wout) yr[ow + 1] = static_cast<T>(v1);
        }
      }
    }
}

int round_up(int a, int b) { return (a + b - 1) / b * b; }

// The tile where none is forced: 32 output channels a warp where a group has at most 32 (64 columns a warp),
// else 64; 8 warps for up to 9 taps, else 16 (a taller halo for the weights each block stages).
DenseTile pick(const ConvTParams& p, DenseTile t) {
  if (t.mt == 0) t.mt = p.Cout_g <= 32 ? 2 : 4;
  if (t.warps == 0) t.warps = p.KH * p.KW <= 9 ? 8 : 16;
  return t;
}

DenseGeom geometry(const ConvTParams& p, int elem, bool strict, DenseTile t, int smem_limit) {
  const int V = 16 / elem, CH = elem == 2 ? 16 : 8, TW = 16 / t.mt * 8, WA = strict ? 8 : 4;
  DenseGeom d{};
  static_cast<StrideOneDims&>(d) = StrideOneDims::of(p);
  d.hr = t.warps + (d.kh - 1) * d.dh;
  d.rp = round_up(V - 1 + TW + (d.kw - 1) * d.dw, V);
  d.rpv = d.rp / V;
  d.cp = round_up(d.hr * d.rp, 32) + 8;
  d.cpr = elem == 2 ? d.hr * d.rp : d.cp;
  d.halo_words = elem == 2 ? 8 * d.hr * d.rp : 8 * d.cp;
  d.w_slab = d.kh * d.kw * t.mt * 32 * WA;
  d.stage_words = d.halo_words + d.w_slab;
  const int extra = elem == 2 ? 8 * d.cp : 0;  // half types: the interleaved halo
  const int table = round_up(d.hr * d.rpv, 4);
  d.stages = (3 * d.stage_words + extra + table) * 4 <= smem_limit ? 3 : 2;
  d.table_word = d.stages * d.stage_words + extra;
  d.smem_bytes = (d.table_word + table) * 4;
  d.chunks = (d.cin_g + CH - 1) / CH;
  d.co_tiles = (d.cout_g + t.mt * 16 - 1) / (t.mt * 16);
  d.th_tiles = (d.hout + t.warps - 1) / t.warps;
  d.tw_tiles = (d.wout + TW - 1) / TW;
  return d;
}

template <typename T, bool kStrict, int MT, int NW>
void launch_typed(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                  at::Tensor& out, cudaStream_t stream) {
  const int elem = static_cast<int>(sizeof(T));
  const DenseGeom d = geometry(p, elem, kStrict, {MT, NW}, max_smem_optin(x.get_device()));
  const int64_t blocks = p.groups * int64_t(d.co_tiles) * d.n * d.th_tiles * d.tw_tiles;
  if (blocks == 0) return;
  const int64_t slots = p.groups * int64_t(d.co_tiles) * d.chunks * d.kh * d.kw * MT * 32;
  at::Tensor packed = at::empty({slots * (kStrict ? 8 : 4)}, x.options().dtype(at::kInt));
  uint32_t* wp = reinterpret_cast<uint32_t*>(packed.mutable_data_ptr<int>());
  const unsigned pack_blocks = static_cast<unsigned>(std::min<int64_t>((slots + 255) / 256, 4096));
  dense_pack_kernel<T, kStrict, MT><<<pack_blocks, 256, 0, stream>>>(d, w.const_data_ptr<T>(), wp, slots);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  T* y = out.mutable_data_ptr<T>();
  const bool pair = p.Wout % 2 == 0 && reinterpret_cast<uintptr_t>(y) % (2 * sizeof(T)) == 0;
  const int smem = d.smem_bytes;
  auto kernel = convt_dense_kernel<T, kStrict, MT, NW>;
  allow_dynamic_smem(kernel, smem);
  kernel<<<static_cast<unsigned>(blocks), NW * 32, smem, stream>>>(
      d, x.const_data_ptr<T>(), wp, b.defined() ? b.const_data_ptr<T>() : nullptr, y, pair);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T, bool kStrict>
void launch_tile(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out,
                 DenseTile t, cudaStream_t stream) {
  if (t.mt == 2) {
    if (t.warps == 16) {
      launch_typed<T, kStrict, 2, 16>(p, x, w, b, out, stream);
    } else {
      launch_typed<T, kStrict, 2, 8>(p, x, w, b, out, stream);
    }
  } else if (t.warps == 16) {
    launch_typed<T, kStrict, 4, 16>(p, x, w, b, out, stream);
  } else {
    launch_typed<T, kStrict, 4, 8>(p, x, w, b, out, stream);
  }
}

}  // namespace

StrideOneDims StrideOneDims::of(const ConvTParams& p) {
  StrideOneDims d{};
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
  d.hw_in = p.Hin * p.Win;
  return d;
}

bool dense_supports(const ConvTParams& p, const at::Tensor& x, bool tf32, DenseTile tile) {
  const at::ScalarType dt = x.scalar_type();
  if (dt != at::kHalf && dt != at::kBFloat16 && dt != at::kFloat) return false;
  if (p.sh != 1 || p.sw != 1) return false;
  const int elem = static_cast<int>(x.element_size()), V = 16 / elem;
  const int64_t lim = int64_t(1) << 30;
  if (p.Win % V != 0 || reinterpret_cast<uintptr_t>(x.const_data_ptr()) % 16 != 0) return false;
  if (p.Hin * p.Win >= lim || p.Hout >= lim || p.Wout >= lim || p.Cin >= lim || p.Cout >= lim || p.N >= lim)
    return false;
  if (p.KH * p.dh >= 4096 || p.KW * p.dw >= 4096 || p.ph >= lim || p.pw >= lim) return false;
  const DenseTile t = pick(p, tile);
  const int limit = max_smem_optin(x.get_device());
  const DenseGeom d = geometry(p, elem, dt == at::kFloat && !tf32, t, limit);
  if (d.smem_bytes > limit) return false;
  if (int64_t(d.hr) * d.rp * 8 >= lim) return false;
  return p.groups * int64_t(d.co_tiles) * d.n * d.th_tiles * d.tw_tiles < (int64_t(1) << 31);
}

void launch_dense(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                  at::Tensor& out, bool tf32, DenseTile tile, cudaStream_t stream) {
  const DenseTile t = pick(p, tile);
  CONVT_CHECK((t.mt == 2 || t.mt == 4) && (t.warps == 8 || t.warps == 16),
              "convt: the dense kernel takes 2 or 4 m-tiles and 8 or 16 warps, not ", t.mt, " and ", t.warps);
  switch (x.scalar_type()) {
    case at::kFloat:
      if (tf32) {
        launch_tile<float, false>(p, x, w, b, out, t, stream);
      } else {
        launch_tile<float, true>(p, x, w, b, out, t, stream);
      }
      break;
    case at::kHalf: launch_tile<at::Half, false>(p, x, w, b, out, t, stream); break;
    case at::kBFloat16: launch_tile<at::BFloat16, false>(p, x, w, b, out, t, stream); break;
    default: TORCH_CHECK(false, "convt: the dense kernel takes float32, float16 and bfloat16");
  }
}

}  // namespace convt
