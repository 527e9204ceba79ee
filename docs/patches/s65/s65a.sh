#!/bin/bash
# session 65 call A: the tree as it stands (1c272ef: v62, the SM count queried once) on the card lent: bench.run of
# record first, then GPU time of the batch-1 decoder layers and the FSRCNN probe, then the stack tests (the form of
# record since session 64's tests ran on the commit before 1c272ef's host-only change).
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
python3 -m kernels build > $OUT/build.txt 2>&1 || { grep -B2 -A5 error $OUT/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 -m bench.run --out $OUT/bench > $OUT/a-bench-run.txt 2>&1; echo "bench rc $?"; tail -n 8 $OUT/a-bench-run.txt
echo "t $((SECONDS - t0)) s"
timeout 150 python3 -m bench.gpu_time --cases fsrcnn-56-1-n1,unet-128-64-n1,dcgan-128-64-n1,probe-fsrcnn-n4-128 \
  --modes fp32,strict,fp16,bf16 --algos auto > $OUT/a-gpu-time.txt 2>&1; tail -18 $OUT/a-gpu-time.txt
echo "t $((SECONDS - t0)) s"
timeout $((590 - (SECONDS - t0))) python3 -m pytest -q tests/kernels -k "stack and not compute_sanitizer" \
  -p no:cacheprovider > $OUT/a-tests.txt 2>&1; grep -E "^E  .*error|FAILED|passed|failed" $OUT/a-tests.txt | head -10
rm -f $OUT/build.txt
echo "all $((SECONDS - t0)) s"
