#!/bin/bash
# session 53 call B: kb71 TF32 on the window kernel where DRAM gives 16+ bytes an SM cycle: build, GPU time beside
# cuDNN on kb71 and narrow probes, the window kernel's tests, part A, bench.run
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 -m bench.gpu_time --cases kb71,probe-32-32-k3-n2,probe-16-32-k3x2-n4,probe-64-64-k3-g2-n8,probe-32-24-k3x4-n1 \
  --modes fp32 --algos auto,dwin,dwnp8,dwn8 2>&1 | tee $OUT/gpu-time.txt
echo "times $((SECONDS - t0)) s"
{ python3 -m pytest -q tests/kernels -k "dwin or (kernelbench_problem and auto)" -p no:cacheprovider 2>&1 | tail -3
  python3 -m pytest -q tests/kernels -k "random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack" -p no:cacheprovider 2>&1 | tail -3
} 2>&1 | tee $OUT/gpu-tests.txt
echo "tests $((SECONDS - t0)) s"
python3 -m bench.run --out $OUT/bench > $OUT/bench-run.txt 2>&1; echo "bench.run rc $?"
tail -32 $OUT/bench-run.txt
echo "all $((SECONDS - t0)) s"
