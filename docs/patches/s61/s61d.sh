#!/bin/bash
# session 61 call D: edge kernel form 5 (form 4 with staging by column: a row's channel by a constant divisor), the
# last call of the session's budget: build, window tests, dwin sanitizers, the kernels' own times, GPU time beside
# cuDNN, part A, then bench.run with what time is left (outputs straight to $OUT)
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { grep -B2 -A5 error $OUT/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
{
  echo "== window tests"; python3 -m pytest -q tests/kernels -k "dwin or pick or (kernelbench_problem and auto)" -p no:cacheprovider 2>&1 | grep -E "FAILED|passed|failed|Error" | head -20
  for tool in memcheck racecheck; do
    CONVT_SANITIZE_ALGOS=dwin compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py > $OUT/san-$tool.txt 2>&1
    echo "$tool rc $? $(tail -1 $OUT/san-$tool.txt)"
  done
  echo "t $((SECONDS - t0)) s"
  for m in fp32 fp16; do python3 docs/patches/s60/edge_kernels.py kb71 $m 2>&1 | grep -v "Warn\|warn"; done
  python3 -m bench.gpu_time --cases kb71,probe-kb78-p12 --modes fp32,fp16 --algos auto 2>&1 | tail -6
  echo "t $((SECONDS - t0)) s"
  echo "== part A"; python3 -m pytest -q tests/kernels -k "random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack" -p no:cacheprovider 2>&1 | tail -1
  echo "t $((SECONDS - t0)) s"
} 2>&1 | tee $OUT/land.txt
timeout $((385 - SECONDS + t0)) python3 -m bench.run --out $OUT/bench > $OUT/bench-run.txt 2>&1; echo "bench.run rc $?"
grep -E "^\| kb71|Geometric mean speedup, KernelBench" $OUT/bench-run.txt | head -8
echo "all $((SECONDS - t0)) s"
