"""Bisects the stack kernel's TMA trap (kernel-notes v43b): one block loads one TMA box of an NCHW float tensor
(FSRCNN's 56 x 256 x 256) into shared memory under each map variant (rank, type, swizzle, box, shared memory, issuing
warp), each in its own process since a trap kills the CUDA context. Prints per variant: ok (the box's sum matches
torch's) / mismatch / trap. Session 43's run found the rule: a box's first column must sit on 16 bytes (x0 = 1, 2, -2
trap; -32, -8, -4, 0, 4, 240 load; docs/benchmarks/trace-s43.md). PROBE_ONLY (environment): a substring of the
variants' names to run.

    python -m bench.tma_probe        (sm_90; builds a small module into $PROBE_DIR, /tmp/tma_probe by default)
"""
import os, subprocess, sys, json
import torch
from torch.utils.cpp_extension import load_inline

SRC = r'''
#include <cuda.h>
#include <cuda_runtime.h>
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <cstdint>
// The project's tensor-map encoder (the stack and wgmma kernels' maps), built into this module as bench.stack_trace's is.
#include "tma_map.cu"
namespace {
// The project's mbarrier and TMA wrappers, the very ones the stack kernel's ring called.
#include "wg_ptx.cuh"

__global__ void probe(const __grid_constant__ CUtensorMap m, float* out, int rank, int c0, int c1, int bytes, int words,
                      int issuer, int via_lambda) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)  // the wrappers exist for sm_90a only
  extern __shared__ __align__(1024) unsigned char sm[];
  __shared__ __align__(8) uint64_t bar;
  unsigned char* dst = sm + ((1024 - (smem_addr(sm) & 1023)) & 1023);
  if (threadIdx.x == 0) {
    mbar_init(&bar, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  // via_lambda: issued from a lambda that captures the map by reference, as the stack kernel's ring did
  auto issue = [&](int x0) {
    if (rank == 5) tma_load_5d(dst, &m, &bar, x0, c1, 0, 0, 0);
    else tma_load_4d(dst, &m, &bar, x0, c1, 0, 0);
  };
  if (threadIdx.x == issuer) {
    mbar_expect_tx(&bar, bytes);
    if (via_lambda) issue(c0);
    else if (rank == 5) tma_load_5d(dst, &m, &bar, c0, c1, 0, 0, 0);
    else tma_load_4d(dst, &m, &bar, c0, c1, 0, 0);
  }
  mbar_wait(&bar, 0);
  for (int i = threadIdx.x; i < words; i += blockDim.x) out[i] = reinterpret_cast<float*>(dst)[i];
#endif
}
}  // namespace
torch::Tensor run(torch::Tensor x, std::vector<int64_t> dims, std::vector<int64_t> strides, std::vector<int64_t> box,
                  int64_t dtype, int64_t swizzle, int64_t c0, int64_t c1, int64_t smem, int64_t threads, int64_t issuer, int64_t via_lambda) {
  const int rank = dims.size();
  cuuint64_t d[5], s[4]; cuuint32_t b[5];
  int64_t words = 1;
  for (int i = 0; i < rank; ++i) { d[i] = dims[i]; b[i] = box[i]; words *= box[i]; }
  for (int i = 0; i + 1 < rank; ++i) s[i] = strides[i];
  const CUtensorMap m = convt::encode_tiled_map(CUtensorMapDataType(dtype), rank, x.data_ptr(), d, s, b,
                                                CUtensorMapSwizzle(swizzle));
  auto out = torch::full({words}, -1.f, x.options());
  cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  probe<<<1, threads, smem, c10::cuda::getCurrentCUDAStream()>>>(m, out.data_ptr<float>(), rank, c0, c1, int(words * 4),
                                                                   int(words), int(issuer), int(via_lambda));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
'''
CPP = "torch::Tensor run(torch::Tensor x, std::vector<int64_t> dims, std::vector<int64_t> strides, std::vector<int64_t> box, int64_t dtype, int64_t swizzle, int64_t c0, int64_t c1, int64_t smem, int64_t threads, int64_t issuer, int64_t via_lambda);"
W, H, C = 256, 256, 56
P = W * H * 4
F32, U32, SW128, SWNONE = 7, 2, 3, 0  # CUtensorMapDataType FLOAT32=7, UINT32=2; swizzle 128B=3
VARIANTS = {
    "stack-like 5d f32 swz128 box56 x0=-2": ([W, H, C, 1, 1], [W * 4, P, P * C, P * C], [32, 1, C, 1, 1], F32, SW128, -2, 0, 110000, 256, 0),
    "same x0=0": ([W, H, C, 1, 1], [W * 4, P, P * C, P * C], [32, 1, C, 1, 1], F32, SW128, 0, 0, 110000, 256, 0),
    "4d f32 swz128": ([W, H, C, 1], [W * 4, P, P * C], [32, 1, C, 1], F32, SW128, 0, 0, 110000, 256, 0),
    "4d f32 no swizzle": ([W, H, C, 1], [W * 4, P, P * C], [32, 1, C, 1], F32, SWNONE, 0, 0, 110000, 256, 0),
    "4d u32 swz128": ([W, H, C, 1], [W * 4, P, P * C], [32, 1, C, 1], U32, SW128, 0, 0, 110000, 256, 0),
    "4d f32 swz128 box8": ([W, H, C, 1], [W * 4, P, P * C], [32, 1, 8, 1], F32, SW128, 0, 0, 110000, 256, 0),
    "4d f32 no swizzle box 64x4x32 (wgh-like)": ([W, H, C, 1], [W * 4, P, P * C], [64, 4, 32, 1], F32, SWNONE, 0, 0, 110000, 256, 0),
    "4d f32 swz128 small smem": ([W, H, C, 1], [W * 4, P, P * C], [32, 1, C, 1], F32, SW128, 0, 0, 16384, 256, 0),
    "4d f32 swz128 issuer warp 8": ([W, H, C, 1], [W * 4, P, P * C], [32, 1, C, 1], F32, SW128, 0, 0, 110000, 288, 256),
    # the map reached through a lambda's by-reference capture (the stack kernel's tma_row)
    "stack-like 5d, via lambda": ([W, H, C, 1, 1], [W * 4, P, P * C, P * C], [32, 1, C, 1, 1], F32, SW128, -2, 0, 110000, 256, 0, 1),
    "4d f32 swz128, via lambda": ([W, H, C, 1], [W * 4, P, P * C], [32, 1, C, 1], F32, SW128, 0, 0, 110000, 256, 0, 1),
    # session 43: x0 = -2 traps and 0 does not: a negative start, or one off 16 bytes?
    **{f"4d f32 swz128 x0={x0}": ([W, H, C, 1], [W * 4, P, P * C], [32, 1, C, 1], F32, SW128, x0, 0, 110000, 256, 0)
       for x0 in (-4, -8, -32, 2, 4, 1, 240)},
    **{f"4d f32 no swizzle box68 x0={x0}": ([W, H, C, 1], [W * 4, P, P * C], [68, 1, C, 1], F32, SWNONE, x0, 0, 110000, 256, 0)
       for x0 in (-4, -2, 0, 2, 192, 252)},
}

def one(name):
    import importlib.util
    spec = importlib.util.spec_from_file_location("tma_probe", os.path.join(os.environ["PROBE_DIR"], "tma_probe.so"))
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    dims, strides, box, dt, sw, c0, c1, smem, threads, issuer, *lam = VARIANTS[name]
    torch.manual_seed(0)
    x = torch.randn(1, C, H, W, device="cuda")
    out = mod.run(x, dims, strides, box, dt, sw, c0, c1, smem, threads, issuer, lam[0] if lam else 0)
    torch.cuda.synchronize()
    # the box: columns c0..c0+box0 (zero outside), rows c1..c1+box1, channels 0..box2 (rank >= 3)
    xs = torch.nn.functional.pad(x, (64, 64))[0]  # pad width by 64 a side
    if len(dims) >= 4:
        ref = xs[: box[2], c1 : c1 + box[1], 64 + c0 : 64 + c0 + box[0]]
    else:
        ref = x[0].reshape(H * C, W)
        ref = torch.nn.functional.pad(ref, (64, 64))[c1 : c1 + box[1], 64 + c0 : 64 + c0 + box[0]]
    ok = abs(float(out.double().sum()) - float(ref.double().sum())) < 1e-2 and bool((out != -1).all())
    print(json.dumps({"variant": name, "result": "ok" if ok else "mismatch"}), flush=True)

if __name__ == "__main__":
    if len(sys.argv) > 1:
        one(sys.argv[1]); sys.exit(0)
    d = os.environ.setdefault("PROBE_DIR", "/tmp/tma_probe")
    os.makedirs(d, exist_ok=True)
    cuda_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kernels", "csrc", "cuda")
    load_inline("tma_probe", CPP, cuda_sources=SRC, functions=["run"], extra_include_paths=[cuda_dir],
                extra_cuda_cflags=["-gencode=arch=compute_90a,code=sm_90a", "-O2"], build_directory=d, verbose=False)
    only = os.environ.get("PROBE_ONLY", "")  # a substring of the variants' names to run
    for name in [v for v in VARIANTS if only in v]:
        r = subprocess.run([sys.executable, __file__, name], capture_output=True, text=True, timeout=120)
        line = [l for l in r.stdout.splitlines() if l.startswith("{")]
        print(line[0] if line else json.dumps({"variant": name, "result": "trap/err", "tail": (r.stderr.strip().splitlines() or [""])[-1][:160]}), flush=True)
