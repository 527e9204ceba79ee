#!/bin/bash
# session 59 call C: the GPU tests the window calls did not run (part B: every kernel test outside part A and the
# window set, the sanitizer runs excepted), on d80221d (v56 landed)
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { grep -B2 -A5 error /tmp/o/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
A="random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack"
timeout $((585 - SECONDS + t0)) python3 -m pytest -q tests/kernels -k "not ($A) and not compute_sanitizer" -p no:cacheprovider \
  > /tmp/o/part-b.txt 2>&1; echo "part B rc $?"
grep -E "FAILED|ERROR|passed|failed" /tmp/o/part-b.txt | tail -15
(cd /tmp/o && tar czf $OUT/s59c.tgz .)
echo "all $((SECONDS - t0)) s"
