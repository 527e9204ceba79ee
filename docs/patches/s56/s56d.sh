#!/bin/bash
# session 56 call D: part B of the GPU tests (everything but part A, the window kernel's and the sanitizer runs) on
# the final tree
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > /tmp/build.txt 2>&1 || { grep -B2 -A5 error /tmp/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
timeout $((590 - SECONDS + t0)) python3 -m pytest -q -x tests/kernels -k "not (random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack) and not compute_sanitizer" -p no:cacheprovider 2>&1 | tail -3
echo "part B $((SECONDS - t0)) s"
