#!/bin/bash
# session 66, after s66a2.sh on the same warm machine (the build kept): part B of the GPU suite on the tree (v63).
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
pytest -q tests/kernels -k "not (random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack) and not compute_sanitizer" \
  -p no:cacheprovider > $OUT/tests-b.txt 2>&1; echo "part B rc $?: $(tail -1 $OUT/tests-b.txt) $((SECONDS-t0)) s"
