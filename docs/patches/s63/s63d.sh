#!/bin/bash
# session 63 call D: v61 (the stack kernel's weight loads before its first rows, with the ring) as the tree has it:
# the stack and decoder-layer tests, memcheck and racecheck over the stack configurations, GPU time of the FSRCNN
# layers, then bench.run of record.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { grep -B2 -A5 error $OUT/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 -m pytest -q tests/kernels -k "(stack or decoder or pick) and not compute_sanitizer" -p no:cacheprovider \
  > $OUT/tests.txt 2>&1; grep -E "^E  .*error|FAILED|passed|failed" $OUT/tests.txt | head -10
echo "t $((SECONDS - t0)) s"
for tool in memcheck racecheck; do
  CONVT_SANITIZE_ALGOS=stack timeout 100 compute-sanitizer --tool=$tool --error-exitcode=99 python3 \
    tests/kernels/sanitize_cases.py > $OUT/$tool.txt 2>&1; echo "$tool rc $?"; tail -n 1 $OUT/$tool.txt
done
echo "t $((SECONDS - t0)) s"
python3 -m bench.gpu_time --cases fsrcnn-56-1-n1,probe-fsrcnn-n4-128 --modes fp32,fp16 --algos auto \
  > $OUT/gpu-time.txt 2>&1; cat $OUT/gpu-time.txt | tail -6
echo "t $((SECONDS - t0)) s"
python3 -m bench.run --out $OUT/bench > $OUT/bench-run.txt 2>&1; echo "bench rc $?"; tail -n 12 $OUT/bench-run.txt
echo "all $((SECONDS - t0)) s"
