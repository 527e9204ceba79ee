// The kernel-equals-stride path (see convt_shuffle.h). A block computes 128 pixels of one image and group against
// 128 GEMM columns (output channel, kernel row, kernel column) on mma.sync: m16n8k16 for fp16/bf16, m16n8k8 TF32 for
// fp32. The operands are read as they lie, with no layout pass: a chunk of input channels is a [channel][pixel] slab
// of the NCHW input and a [channel][column] slab of the (Cin, Cout/g, KH, KW) weights, both copied by 16-byte
// cp.async into three stage buffers (one barrier a chunk). Half-type fragments come out of those k-major slabs by
// ldmatrix.trans; TF32 fragments by plain loads, whose row pitch (8 words past a multiple of 32) puts a warp's 32
// reads in 32 banks. Where the kernel width is even, a fragment's column pair is two adjacent outputs of one row and
// goes out as one store; eight lanes then cover 32 contiguous bytes.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "convt_shuffle.h"

namespace convt {
namespace {

constexpr int kThreads = 256;  // 8 warps: 2 along pixels x 4 along columns, 64 x 32 each
constexpr int kBM = 128;       // pixels a block
constexpr int kBN = 128;       // GEMM columns a block (the copy loops below assume kBN == kBM)
constexpr int kStages = 3;
constexpr int kPitch = kBM + 8;  // elements a staged row: ldmatrix's 8 rows (and TF32's 4 x 8 reads) hit every bank

// Input channels a stage: KB x 64 bytes of k (KB 1 or 2), so a stage is KB x 2 x 8.5 KB in every type.
template <typename T, int KB>
constexpr int kBK = KB * 64 / static_cast<int>(sizeof(T));
template <typename T>
constexpr int kVec = 16 / static_cast<int>(sizeof(T));  // elements a 16-byte copy
template <typename T, int KB>
constexpr int kStageElems = 2 * kBK<T, KB> * kPitch;  // A slab, then B slab
template <typename T, int KB>
constexpr int kSmemBytes = kStages * kStageElems<T, KB> * static_cast<int>(sizeof(T));

struct ShuffleGeom {
  int hw, win;         // pixels an image, input width
  int nc;              // GEMM columns a group: Cout_g * KH * KW
  int kh, kw, kk;      // kernel (== stride) and its area
  int cin_g;
  int m_tiles, n_tiles;
};

__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 16 : 0) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

__device__ __forceinline__ uint32_t tf32(float f) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
  return r;
}

template <typename T>
struct Mma;
template <>
struct Mma<at::Half> {
  static __device__ __forceinline__ void run(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};
template <>
struct Mma<at::BFloat16> {
  static __device__ __forceinline__ void run(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};
template <>
struct Mma<float> {
  static __device__ __forceinline__ void run(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

// One staged chunk into the warp's 64 x 32 accumulators. As/Bs: [k][pixel] and [k][column] slabs.
template <typename T, int BK>
__device__ __forceinline__ void mma_chunk(float (&acc)[4][4][4], const T* As, const T* Bs, int wm, int wn,
                                          int lane) {
  if constexpr (std::is_same_v<T, float>) {
    // m16n8k8 TF32: a0 (pixel g, k t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); b0 (k t, column g), b1 (t+4, g).
    const int gq = lane >> 2, t = lane & 3;
#pragma unroll
    for (int ks = 0; ks < BK; ks += 8) {
      uint32_t a[4][4], b[4][2];
      const float* ap = As + (ks + t) * kPitch + wm * 64 + gq;
      const float* bp = Bs + (ks + t) * kPitch + wn * 32 + gq;
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
        a[mi][0] = tf32(ap[mi * 16]);
        a[mi][1] = tf32(ap[mi * 16 + 8]);
        a[mi][2] = tf32(ap[4 * kPitch + mi * 16]);
        a[mi][3] = tf32(ap[4 * kPitch + mi * 16 + 8]);
      }
#pragma unroll
      for (int nj = 0; nj < 4; ++nj) {
        b[nj][0] = tf32(bp[nj * 8]);
        b[nj][1] = tf32(bp[4 * kPitch + nj * 8]);
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int nj = 0; nj < 4; ++nj) Mma<T>::run(acc[mi][nj], a[mi], b[nj]);
    }
  } else {
    // m16n8k16: the slabs are k-major, so each 8 x 8 fragment matrix is 8 k-rows of 8 pixels (or columns) and
    // ldmatrix.trans hands thread (g, t) the pair (k 2t, 2t+1) of pixel (column) g. Lanes 8i..8i+7 address
    // matrix i: A's are (k 0-7 | 8-15) x (pixels 0-7 | 8-15) in a0..a3 order, B's two n8 tiles' (k 0-7, 8-15).
    const int i = lane >> 3, r = lane & 7;
#pragma unroll
    for (int ks = 0; ks < BK; ks += 16) {
      uint32_t a[4][4], b[4][2];
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
        ldmatrix_x4_trans(a[mi], As + (ks + (i >> 1) * 8 + r) * kPitch + wm * 64 + mi * 16 + (i & 1) * 8);
#pragma unroll
      for (int jp = 0; jp < 2; ++jp) {
        uint32_t q[4];
        ldmatrix_x4_trans(q, Bs + (ks + (i & 1) * 8 + r) * kPitch + wn * 32 + jp * 16 + (i >> 1) * 8);
        b[2 * jp][0] = q[0];
        b[2 * jp][1] = q[1];
        b[2 * jp + 1][0] = q[2];
        b[2 * jp + 1][1] = q[3];
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int nj = 0; nj < 4; ++nj) Mma<T>::run(acc[mi][nj], a[mi], b[nj]);
    }
  }
}

__device__ __forceinline__ void store2(float* y, float v0, float v1) {
  *reinterpret_cast<float2*>(y) = make_float2(v0, v1);
}
__device__ __forceinline__ void store2(at::Half* y, float v0, float v1) {
  *reinterpret_cast<__half2*>(y) = __floats2half2_rn(v0, v1);
}
__device__ __forceinline__ void store2(at::BFloat16* y, float v0, float v1) {
  *reinterpret_cast<__nv_bfloat162*>(y) = __floats2bfloat162_rn(v0, v1);
}

template <typename T, int KB>
__global__ void __launch_bounds__(kThreads, 2)
    convt_shuffle_kernel(const ConvTParams p, const ShuffleGeom sg, const T* __restrict__ x,
                         const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ y, bool pair) {
  constexpr int BK = kBK<T, KB>, V = kVec<T>, kRowCopies = kBM / V, kCopies = BK * kRowCopies / kThreads;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>(smem_raw);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp & 1, wn = warp >> 1;

  // Column tiles fastest: the blocks that read one pixel tile run together and share it through L2.
  unsigned blk = blockIdx.x;  // < 2^31 (shuffle_supports)
  const int nt = static_cast<int>(blk % sg.n_tiles);
  blk /= sg.n_tiles;
  const int mt = static_cast<int>(blk % sg.m_tiles);
  blk /= sg.m_tiles;
  const int64_t g = blk % p.groups, n = blk / p.groups;
  const int m0 = mt * kBM, n0 = nt * kBN;

  const T* xg = x + (n * p.Cin + g * sg.cin_g) * sg.hw;
  const T* wg = w + g * sg.cin_g * sg.nc;
  const int nchunks = (sg.cin_g + BK - 1) / BK;

  // A stage is BK rows of 128 elements an operand: 512 or 1024 16-byte copies, 2 or 4 a thread; copies past the channels,
  // pixels or columns are zero-filled (whole: pixels and columns come in multiples of 16 bytes).
  auto load_stage = [&](int chunk, int buf) {
    T* As = smem + buf * kStageElems<T, KB>;
    T* Bs = As + BK * kPitch;
    const int k0 = chunk * BK;
#pragma unroll
    for (int j = 0; j < kCopies; ++j) {
      const int e = tid + j * kThreads;
      const int r = e / kRowCopies, c = (e % kRowCopies) * V;
      const bool kin = k0 + r < sg.cin_g;
      const bool a_ok = kin && m0 + c < sg.hw, b_ok = kin && n0 + c < sg.nc;
      cp_async16(As + r * kPitch + c, a_ok ? xg + int64_t(k0 + r) * sg.hw + m0 + c : x, a_ok);
      cp_async16(Bs + r * kPitch + c, b_ok ? wg + int64_t(k0 + r) * sg.nc + n0 + c : w, b_ok);
    }
  };

  float acc[4][4][4];
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int nj = 0; nj < 4; ++nj)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][nj][e] = 0.f;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < nchunks) load_stage(s, s);
    cp_async_commit();
  }
  for (int kc = 0; kc < nchunks; ++kc) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // chunk kc is in; every warp is past chunk kc - 1, whose buffer the next copies reuse
    const int next = kc + kStages - 1;
    if (next < nchunks) load_stage(next, next % kStages);
    cp_async_commit();
    const T* As = smem + (kc % kStages) * kStageElems<T, KB>;
    mma_chunk<T, BK>(acc, As, As + BK * kPitch, wm, wn, lane);
  }

  // Epilogue: accumulator (pixel g or g+8, columns 2t and 2t+1) of each 16 x 8 tile.
  const int gq = lane >> 2, t = lane & 3;
  int64_t pix_off[4][2];
  bool pix_ok[4][2];
#pragma unroll
  for (int mi = 0; mi < 4; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = m0 + wm * 64 + mi * 16 + gq + 8 * h;
      const int ih = m / sg.win, iw = m - ih * sg.win;
      pix_ok[mi][h] = m < sg.hw;
      pix_off[mi][h] = int64_t(ih) * sg.kh * p.Wout + int64_t(iw) * sg.kw;
    }
  auto column = [&](int c, int64_t& off, float& bv) {
    const int co = c / sg.kk, rem = c - co * sg.kk, a = rem / sg.kw, b = rem - a * sg.kw;
    const int64_t oc = g * p.Cout_g + co;
    off = ((n * p.Cout + oc) * p.Hout + a) * p.Wout + b;
    bv = bias != nullptr ? static_cast<float>(bias[oc]) : 0.f;
  };
#pragma unroll
  for (int nj = 0; nj < 4; ++nj) {
    const int c = n0 + wn * 32 + nj * 8 + 2 * t;
    if (c >= sg.nc) continue;  // nc is a multiple of 4 or 8, so c + 1 < nc too
    int64_t off0, off1;
    float b0, b1;
    column(c, off0, b0);
    if (pair) {
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          if (pix_ok[mi][h]) store2(y + off0 + pix_off[mi][h], acc[mi][nj][2 * h] + b0, acc[mi][nj][2 * h + 1] + b0);
    } else {
      column(c + 1, off1, b1);
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          if (pix_ok[mi][h]) {
            y[off0 + pix_off[mi][h]] = static_cast<T>(acc[mi][nj][2 * h] + b0);
            y[off1 + pix_off[mi][h]] = static_cast<T>(acc[mi][nj][2 * h + 1] + b1);
          }
    }
  }
}

ShuffleGeom geometry(const ConvTParams& p) {
  ShuffleGeom sg;
  sg.hw = static_cast<int>(p.Hin * p.Win);
  sg.win = static_cast<int>(p.Win);
  sg.kh = static_cast<int>(p.KH);
  sg.kw = static_cast<int>(p.KW);
  sg.kk = sg.kh * sg.kw;
  sg.nc = static_cast<int>(p.Cout_g) * sg.kk;
  sg.cin_g = static_cast<int>(p.Cin_g);
  sg.m_tiles = (sg.hw + kBM - 1) / kBM;
  sg.n_tiles = (sg.nc + kBN - 1) / kBN;
  return sg;
}

template <typename T, int KB>
void launch_typed(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                  at::Tensor& out, cudaStream_t stream) {
  const ShuffleGeom sg = geometry(p);
  const int64_t blocks = p.N * p.groups * sg.m_tiles * sg.n_tiles;
  if (blocks == 0) return;
  T* y = out.mutable_data_ptr<T>();
  // A column pair is two adjacent outputs of one row where the kernel width is even; one store needs the pair aligned.
  const bool pair = p.KW % 2 == 0 && reinterpret_cast<uintptr_t>(y) % (2 * sizeof(T)) == 0;
  auto kernel = convt_shuffle_kernel<T, KB>;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes<T, KB>));
  kernel<<<static_cast<unsigned>(blocks), kThreads, kSmemBytes<T, KB>, stream>>>(
      p, sg, x.const_data_ptr<T>(), w.const_data_ptr<T>(), b.defined() ? b.const_data_ptr<T>() : nullptr, y, pair);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T>
void launch_depth(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                  at::Tensor& out, int depth, cudaStream_t stream) {
  if (depth == 0) depth = 1;
  CONVT_CHECK(depth == 1 || depth == 2, "convt: the shuffle kernel stages 1 or 2 x 64 bytes of k, not ", depth);
  if (depth == 2) {
    launch_typed<T, 2>(p, x, w, b, out, stream);
  } else {
    launch_typed<T, 1>(p, x, w, b, out, stream);
  }
}

}  // namespace

bool shuffle_supports(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, bool tf32) {
  const at::ScalarType dt = x.scalar_type();
  if (!(dt == at::kHalf || dt == at::kBFloat16 || (dt == at::kFloat && tf32))) return false;
  if (p.KH != p.sh || p.KW != p.sw || p.ph != 0 || p.pw != 0 || p.oph != 0 || p.opw != 0 || p.dh != 1 || p.dw != 1)
    return false;
  const int64_t vec = 16 / static_cast<int64_t>(x.element_size());
  const int64_t hw = p.Hin * p.Win, nc = p.Cout_g * p.KH * p.KW, lim = int64_t(1) << 30;
  if (hw % vec != 0 || nc % vec != 0 || hw >= lim || nc >= lim || p.Cin_g >= lim) return false;
  if (reinterpret_cast<uintptr_t>(x.const_data_ptr()) % 16 != 0 || reinterpret_cast<uintptr_t>(w.const_data_ptr()) % 16 != 0)
    return false;
  return p.N * p.groups * ((hw + kBM - 1) / kBM) * ((nc + kBN - 1) / kBN) < (int64_t(1) << 31);
}

void launch_shuffle(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                    at::Tensor& out, int depth, cudaStream_t stream) {
  switch (x.scalar_type()) {
    case at::kFloat: launch_depth<float>(p, x, w, b, out, depth, stream); break;
    case at::kHalf: launch_depth<at::Half>(p, x, w, b, out, depth, stream); break;
    case at::kBFloat16: launch_depth<at::BFloat16>(p, x, w, b, out, depth, stream); break;
    default: TORCH_CHECK(false, "convt: the shuffle kernel takes float32 (as TF32), float16 and bfloat16");
  }
}

}  // namespace convt
