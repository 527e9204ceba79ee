#!/bin/bash
# session 61 call B: the tree to land (edge kernel form 4, the env-force helper), built; the window tests; why
# bench.run's per-call events run kb71 over its GPU time (gap.py: four timings, the SM clock sampled); bench.run
# (the results of record); then part B (every kernel test outside part A and the window set, sanitizers excepted)
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { grep -B2 -A5 error $OUT/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 -m pytest -q tests/kernels -k "dwin or pick or (kernelbench_problem and auto)" -p no:cacheprovider 2>&1 \
  | grep -E "FAILED|passed|failed|Error" | head -20 | tee $OUT/window.txt
for c in "kb71 fp32" "kb71 fp16"; do python3 docs/patches/s61/gap.py $c 2>&1 | grep "^|" | tee -a $OUT/gap.txt; done
echo "t $((SECONDS - t0)) s"
python3 -m bench.run --out $OUT/bench > $OUT/bench-run.txt 2>&1; echo "bench.run rc $?"
echo "t $((SECONDS - t0)) s"
A="random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack"
timeout $((590 - SECONDS + t0)) python3 -m pytest -q tests/kernels -k "not ($A) and not compute_sanitizer" \
  -p no:cacheprovider > $OUT/part-b.txt 2>&1; echo "part B rc $?"
grep -E "FAILED|ERROR|passed|failed" $OUT/part-b.txt | tail -8
grep -E "geomean|KernelBench|Strict|fp16|bf16|Decoder" $OUT/bench-run.txt | tail -12
echo "all $((SECONDS - t0)) s"
