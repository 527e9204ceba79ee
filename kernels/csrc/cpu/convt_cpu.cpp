// CPU kernel: phase decomposition into dense GEMMs, as on the GPU. Output phase
// (rh, rw) of group g is C[co][m] = bias[co] + sum_k A[co][k] * B[k][m], with
// k = (tap, input channel) over the taps that reach the phase and m its pixels.
// A is the group's weights packed once a call per phase; B gathers a chunk of an
// image's phase pixels (zeros off the input's edges) a panel of k at a time.
//
// The gather form before this did one (image, output channel) plane a task with a
// pixel loop innermost: on DCGAN's 4x4 and 8x8 inputs that loop is 4-8 long and
// never vectorised, so a 660-row batch took 32-50 s against aten's 1.6-2.3 s (2 cores).
#include <ATen/Parallel.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "../convt_params.h"

namespace convt {
namespace {

constexpr int64_t MR = 6;    // output channels a micro-tile
constexpr int64_t NR = 16;   // pixels a micro-tile: one AVX-512 vector of floats, two of AVX2
constexpr int64_t KC = 256;  // k rows a B panel at most
constexpr int64_t MC = 256;  // pixels a task at most

inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// GCC's generic vectors: each instruction-set form below lowers them to its own registers (zmm, ymm or xmm).
template <typename T>
struct Lanes;
template <>
struct Lanes<float> {
  typedef float type __attribute__((vector_size(NR * sizeof(float))));
  typedef float unaligned __attribute__((vector_size(NR * sizeof(float)), aligned(alignof(float))));
};
template <>
struct Lanes<double> {
  typedef double type __attribute__((vector_size(NR * sizeof(double))));
  typedef double unaligned __attribute__((vector_size(NR * sizeof(double)), aligned(alignof(double))));
};

// One micro-tile: C[MR rows, ldc apart][NR] += A panel (k-major, MR a row) * B panel (K rows, ldb apart).
template <typename acc_t>
__attribute__((always_inline)) inline void micro_tile(int64_t K, const acc_t* a, const acc_t* b, int64_t ldb, acc_t* c,
                                                      int64_t ldc) {
  using V = typename Lanes<acc_t>::type;
  using U = typename Lanes<acc_t>::unaligned;
  V acc[MR];
  for (int64_t r = 0; r < MR; ++r) acc[r] = *reinterpret_cast<const U*>(c + r * ldc);
  for (int64_t k = 0; k < K; ++k) {
    const V bv = *reinterpret_cast<const U*>(b + k * ldb);
    for (int64_t r = 0; r < MR; ++r) acc[r] += a[k * MR + r] * bv;
  }
  for (int64_t r = 0; r < MR; ++r) *reinterpret_cast<U*>(c + r * ldc) = acc[r];
}

// A B panel's pixel block against output-channel blocks [cb0, cb1): the block (K x NR) stays in L1
// while the packed A panels stream past it.
template <typename acc_t>
__attribute__((always_inline)) inline void block_gemm(int64_t K, int64_t cb0, int64_t cb1, const acc_t* a,
                                                      int64_t a_stride, const acc_t* b, int64_t ldb, acc_t* c,
                                                      int64_t ldc) {
  for (int64_t cb = cb0; cb < cb1; ++cb) micro_tile<acc_t>(K, a + cb * a_stride, b, ldb, c + cb * MR * ldc, ldc);
}

// One build serves every x86-64 CPU: each form is compiled for its instruction set, and the
// widest that this CPU runs is picked once. (GCC's target_clones("arch=...") picks by CPU model
// name, so a virtual CPU of no known model got the SSE2 form: 4.7x slower on a dcgan layer.)
#if defined(__x86_64__) && defined(__GNUC__)
template <typename acc_t>
__attribute__((target("avx512f,avx2,fma"))) void gemm_avx512(int64_t K, int64_t cb0, int64_t cb1, const acc_t* a,
                                                             int64_t as, const acc_t* b, int64_t ldb, acc_t* c,
                                                             int64_t ldc) {
  block_gemm<acc_t>(K, cb0, cb1, a, as, b, ldb, c, ldc);
}
template <typename acc_t>
__attribute__((target("avx2,fma"))) void gemm_avx2(int64_t K, int64_t cb0, int64_t cb1, const acc_t* a, int64_t as,
                                                   const acc_t* b, int64_t ldb, acc_t* c, int64_t ldc) {
  block_gemm<acc_t>(K, cb0, cb1, a, as, b, ldb, c, ldc);
}

#endif

enum class Isa { avx512, avx2, base };
// CONVT_CPU_ISA=avx2 or base caps the pick (avx512: no cap), read once a process: the tests run every form on one
// machine.
Isa isa() {
  static const Isa v = [] {
    const char* cap_env = std::getenv("CONVT_CPU_ISA");
    const std::string cap = cap_env ? cap_env : "";
    CONVT_CHECK(cap.empty() || cap == "avx512" || cap == "avx2" || cap == "base",
                "CONVT_CPU_ISA must be avx512, avx2 or base (a cap on the CPU kernel's GEMM form), got '", cap, "'");
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (cap != "base" && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      return cap != "avx2" && __builtin_cpu_supports("avx512f") ? Isa::avx512 : Isa::avx2;
#endif
    return Isa::base;
  }();
  return v;
}

std::string cpu_gemm_form() {
  switch (isa()) {
    case Isa::avx512:
      return "avx512";
    case Isa::avx2:
      return "avx2";
    case Isa::base:
      break;
  }
  return "base";
}

template <typename acc_t>
void gemm(int64_t K, int64_t cb0, int64_t cb1, const acc_t* a, int64_t as, const acc_t* b, int64_t ldb, acc_t* c,
          int64_t ldc) {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (isa()) {
    case Isa::avx512:
      return gemm_avx512<acc_t>(K, cb0, cb1, a, as, b, ldb, c, ldc);
    case Isa::avx2:
      return gemm_avx2<acc_t>(K, cb0, cb1, a, as, b, ldb, c, ldc);
    case Isa::base:
      break;
  }
#endif
  block_gemm<acc_t>(K, cb0, cb1, a, as, b, ldb, c, ldc);
}

struct Tap {
  int64_t kh, kw, bh, bw;  // the weight's tap and the input offset it reads: i = m + b
};

struct Phase {
  int64_t rh, rw, Mh, Mw;
  std::vector<Tap> taps;
};

std::vector<Phase> phases_of(const ConvTParams& p) {
  std::vector<Phase> out;
  for (int64_t rh = 0; rh < std::min(p.sh, p.Hout); ++rh) {
    const PhaseTaps th = phase_taps(rh, p.ph, p.sh, p.dh, p.KH);
    for (int64_t rw = 0; rw < std::min(p.sw, p.Wout); ++rw) {
      const PhaseTaps tw = phase_taps(rw, p.pw, p.sw, p.dw, p.KW);
      Phase ph{rh, rw, phase_extent(rh, p.sh, p.Hout), phase_extent(rw, p.sw, p.Wout), {}};
      for (int64_t kh = th.k0; kh < p.KH; kh += th.step)
        for (int64_t kw = tw.k0; kw < p.KW; kw += tw.step)
          ph.taps.push_back({kh, kw, tap_offset(rh, p.ph, p.sh, p.dh, kh), tap_offset(rw, p.pw, p.sw, p.dw, kw)});
      out.push_back(std::move(ph));
    }
  }
  return out;
}

// A task: rows [h0, h1) x columns [w0, w1) of one phase, for images [n0, n1) of one group and
// output-channel blocks [cb0, cb1). Its pixels j run image-fastest, (h, w, n): where a phase is
// small enough to take several images, a block of NR pixels is then one (h, w) of NR images, and
// a tap that misses that (h, w) skips the whole block (DCGAN's 1x1 input: 15 of 16 taps a pixel).
struct Task {
  int64_t g, phase, n0, n1, h0, h1, w0, w1, cb0, cb1;
};

std::vector<Task> tasks_of(const ConvTParams& p, const std::vector<Phase>& phases, int64_t CB) {
  std::vector<Task> tasks;
  for (int64_t g = 0; g < p.groups; ++g)
    for (int64_t f = 0; f < static_cast<int64_t>(phases.size()); ++f) {
      const Phase& ph = phases[f];
      if (ph.Mh * ph.Mw * 2 <= MC) {
        const int64_t imgs = MC / (ph.Mh * ph.Mw);
        for (int64_t n0 = 0; n0 < p.N; n0 += imgs)
          tasks.push_back({g, f, n0, std::min(p.N, n0 + imgs), 0, ph.Mh, 0, ph.Mw, 0, CB});
      } else if (ph.Mw >= MC) {
        for (int64_t n = 0; n < p.N; ++n)
          for (int64_t h = 0; h < ph.Mh; ++h)
            for (int64_t w0 = 0; w0 < ph.Mw; w0 += MC)
              tasks.push_back({g, f, n, n + 1, h, h + 1, w0, std::min(ph.Mw, w0 + MC), 0, CB});
      } else {
        const int64_t rows = MC / ph.Mw;
        for (int64_t n = 0; n < p.N; ++n)
          for (int64_t h0 = 0; h0 < ph.Mh; h0 += rows)
            tasks.push_back({g, f, n, n + 1, h0, std::min(ph.Mh, h0 + rows), 0, ph.Mw, 0, CB});
      }
    }
  // Few tasks (batch 1, small images): split output channels too, so every thread has work.
  const int64_t want = 4 * at::get_num_threads(), have = static_cast<int64_t>(tasks.size());
  if (have > 0 && have < want && CB > 1) {
    const int64_t split = std::min(CB, (want + have - 1) / have);
    std::vector<Task> finer;
    for (const Task& t : tasks)
      for (int64_t s = 0; s < split; ++s) {
        Task u = t;
        u.cb0 = CB * s / split;
        u.cb1 = CB * (s + 1) / split;
        finer.push_back(u);
      }
    tasks.swap(finer);
  }
  return tasks;
}

template <typename scalar_t, typename acc_t>
void run_cpu(const ConvTParams& p, const scalar_t* x, const scalar_t* w, const scalar_t* bias, scalar_t* out) {
  const std::vector<Phase> phases = phases_of(p);
  const int64_t P = static_cast<int64_t>(phases.size()), KK = p.KH * p.KW;
  const int64_t CB = (p.Cout_g + MR - 1) / MR;  // output-channel blocks a group

  // Packed weights: per (group, phase), CB blocks of [K][MR] (zero rows past Cout_g), k = (tap, channel).
  // Packed in the weight's own order, so its reads stream: at batch 1 the packing is most of the work.
  std::vector<int64_t> a_off(p.groups * P + 1, 0);
  std::vector<int64_t> slot_phase(KK, -1), slot_tap(KK, -1);  // per weight tap: its phase and index there
  for (int64_t gf = 0; gf < p.groups * P; ++gf)
    a_off[gf + 1] = a_off[gf] + CB * MR * static_cast<int64_t>(phases[gf % P].taps.size()) * p.Cin_g;
  for (int64_t f = 0; f < P; ++f)
    for (int64_t t = 0; t < static_cast<int64_t>(phases[f].taps.size()); ++t) {
      slot_phase[phases[f].taps[t].kh * p.KW + phases[f].taps[t].kw] = f;
      slot_tap[phases[f].taps[t].kh * p.KW + phases[f].taps[t].kw] = t;
    }
  // Reused across calls (grow-only, per calling thread): a fresh buffer a call paid its page faults.
  thread_local std::vector<acc_t> a_pack;
  if (static_cast<int64_t>(a_pack.size()) < a_off.back()) a_pack.resize(a_off.back());
  acc_t* const packed = a_pack.data();  // the lambdas below run on other threads, with their own a_pack
  at::parallel_for(0, p.groups * p.Cin_g, 1, [&](int64_t begin, int64_t end) {
    for (int64_t gc = begin; gc < end; ++gc) {
      const int64_t g = gc / p.Cin_g, ci = gc % p.Cin_g;
      const scalar_t* src = w + gc * p.Cout_g * KK;  // this channel's [Cout_g][KK]: in L1
      for (int64_t tap = 0; tap < KK; ++tap) {
        const int64_t f = slot_phase[tap];
        if (f < 0) continue;
        const int64_t cb_stride = static_cast<int64_t>(phases[f].taps.size()) * p.Cin_g * MR;
        acc_t* dst = packed + a_off[g * P + f] + (slot_tap[tap] * p.Cin_g + ci) * MR;
        for (int64_t co = 0; co < p.Cout_g; ++co) dst[(co / MR) * cb_stride + co % MR] = static_cast<acc_t>(src[co * KK + tap]);
        for (int64_t co = p.Cout_g; co < CB * MR; ++co) dst[(co / MR) * cb_stride + co % MR] = acc_t(0);
      }
    }
  });

  const std::vector<Task> tasks = tasks_of(p, phases, CB);
  // A panel is whole taps where channels are few (so each micro-tile runs a useful length of k),
  // else part of one tap's channels.
  const int64_t taps_per_panel = std::max<int64_t>(1, 64 / p.Cin_g), ci_per_panel = std::min(p.Cin_g, KC);
  const int64_t HWin = p.Hin * p.Win, CHWin = p.Cin * HWin, plane_out = p.Hout * p.Wout;
  at::parallel_for(0, static_cast<int64_t>(tasks.size()), 1, [&](int64_t begin, int64_t end) {
    // Each worker's own panels, kept across calls like a_pack.
    thread_local std::vector<acc_t> bbuf, cbuf;
    thread_local std::vector<char> live(MC / NR);
    bbuf.resize(std::max<size_t>(bbuf.size(), std::max(KC, taps_per_panel * p.Cin_g) * MC));
    cbuf.resize(std::max<size_t>(cbuf.size(), CB * MR * MC));
    for (int64_t ti = begin; ti < end; ++ti) {
      const Task& t = tasks[ti];
      const Phase& ph = phases[t.phase];
      const int64_t imgs = t.n1 - t.n0, cols = t.w1 - t.w0, J = (t.h1 - t.h0) * cols * imgs, ldb = round_up(J, NR);
      const int64_t T = static_cast<int64_t>(ph.taps.size()), K = T * p.Cin_g;
      const scalar_t* xg = x + t.n0 * CHWin + t.g * p.Cin_g * HWin;
      const acc_t* a = packed + a_off[t.g * P + t.phase];
      for (int64_t cb = t.cb0; cb < t.cb1; ++cb)
        for (int64_t r = 0; r < MR; ++r) {
          const int64_t co = cb * MR + r;
          const acc_t b0 = bias && co < p.Cout_g ? static_cast<acc_t>(bias[t.g * p.Cout_g + co]) : acc_t(0);
          std::fill_n(cbuf.data() + (cb * MR + r) * ldb, ldb, b0);
        }
      for (int64_t t0 = 0; t0 < T; t0 += taps_per_panel) {
        const int64_t t1 = std::min(T, t0 + taps_per_panel);
        for (int64_t c0 = 0; c0 < p.Cin_g; c0 += ci_per_panel) {
          const int64_t c1 = std::min(p.Cin_g, c0 + ci_per_panel), nc = c1 - c0;
          std::fill(live.begin(), live.end(), 0);
          for (int64_t tp = t0; tp < t1; ++tp) {
            const Tap& tap = ph.taps[tp];
            const int64_t w0 = std::max(t.w0, -tap.bw), w1 = std::min(t.w1, p.Win - tap.bw);
            for (int64_t ci = c0; ci < c1; ++ci) {
              acc_t* brow = bbuf.data() + ((tp - t0) * nc + ci - c0) * ldb;
              std::fill_n(brow, ldb, acc_t(0));
              for (int64_t h = t.h0; h < t.h1 && w0 < w1; ++h) {
                const int64_t ih = h + tap.bh;
                if (ih < 0 || ih >= p.Hin) continue;
                const scalar_t* src = xg + ci * HWin + ih * p.Win;
                acc_t* dst = brow + (h - t.h0) * cols * imgs;
                if (imgs == 1) {  // a unit-stride copy, which vectorises
                  for (int64_t ow = w0; ow < w1; ++ow) dst[ow - t.w0] = static_cast<acc_t>(src[ow + tap.bw]);
                } else {
                  for (int64_t ow = w0; ow < w1; ++ow)
                    for (int64_t i = 0; i < imgs; ++i)
                      dst[(ow - t.w0) * imgs + i] = static_cast<acc_t>(src[i * CHWin + ow + tap.bw]);
                }
                if (ci == c0)
                  for (int64_t jb = ((h - t.h0) * cols + w0 - t.w0) * imgs / NR;
                       jb <= (((h - t.h0) * cols + w1 - t.w0) * imgs - 1) / NR; ++jb)
                    live[jb] = 1;
              }
            }
          }
          const int64_t kn = (t1 - t0) * nc, k0 = t0 * p.Cin_g + c0;
          // k rows [k0, k0 + kn): a panel of several taps has all their channels
          for (int64_t jb = 0; jb < ldb / NR; ++jb)
            if (live[jb])
              gemm(kn, t.cb0, t.cb1, a + k0 * MR, K * MR, bbuf.data() + jb * NR, ldb, cbuf.data() + jb * NR, ldb);
        }
      }
      scalar_t* on = out + t.n0 * p.Cout * plane_out + t.g * p.Cout_g * plane_out;
      for (int64_t co = t.cb0 * MR; co < std::min(p.Cout_g, t.cb1 * MR); ++co)
        for (int64_t h = t.h0; h < t.h1; ++h) {
          scalar_t* orow = on + co * plane_out + (ph.rh + h * p.sh) * p.Wout + ph.rw;
          const acc_t* crow = cbuf.data() + co * ldb + (h - t.h0) * cols * imgs;
          for (int64_t m = t.w0; m < t.w1; ++m)
            for (int64_t i = 0; i < imgs; ++i)
              orow[i * p.Cout * plane_out + m * p.sw] = static_cast<scalar_t>(crow[(m - t.w0) * imgs + i]);
        }
    }
  });
}

void launch_cpu(const ConvTParams& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "convt_cpu", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    run_cpu<scalar_t, acc_t>(p, x.const_data_ptr<scalar_t>(), w.const_data_ptr<scalar_t>(),
                             b.defined() ? b.const_data_ptr<scalar_t>() : nullptr, out.mutable_data_ptr<scalar_t>());
  });
}

}  // namespace

CONVT_REGISTER_BACKEND(CPU, launch_cpu)

TORCH_LIBRARY_FRAGMENT(convt, m) { m.def("cpu_gemm_form() -> str", &cpu_gemm_form); }

}  // namespace convt
