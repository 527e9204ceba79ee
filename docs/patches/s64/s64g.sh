#!/bin/bash
# session 64 call G: v62's part A of the GPU suite, the decoder-layer and pick tests, and GPU time of the FSRCNN
# layers by bench.gpu_time.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { grep -B2 -A5 error $OUT/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 -m bench.gpu_time --cases fsrcnn-56-1-n1,probe-fsrcnn-n4-128 --modes fp32,fp16 --algos auto \
  > $OUT/g-gpu-time.txt 2>&1; tail -6 $OUT/g-gpu-time.txt
python3 -m pytest -q tests/kernels -p no:cacheprovider -k "(random_configs or wide_channels or halo_kernel or \
rows_kernel or patch_kernel or taps_pick or stack or decoder or pick) and not compute_sanitizer" \
  > $OUT/g-tests.txt 2>&1; grep -E "^E  .*error|FAILED|passed|failed" $OUT/g-tests.txt | head -10
rm -f $OUT/build.txt
echo "all $((SECONDS - t0)) s"
