#!/bin/bash
# session 54 call E: part B of the GPU tests (everything but part A and the sanitizer runs) on the final tree (v51c)
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
echo "build $((SECONDS - t0)) s"
timeout 420 python3 -m pytest -q tests/kernels -p no:cacheprovider \
  -k "not (random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack) and not compute_sanitizer" 2>&1 | tail -4 | tee $OUT/gpu-tests-b.txt
echo "part B $((SECONDS - t0)) s"
