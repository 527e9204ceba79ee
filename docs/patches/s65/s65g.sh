#!/bin/bash
# session 65 call G: the tree with the col2im's partial sums (call F's sum2, landed): the stack, decoder-layer and pick
# tests, memcheck and racecheck over the stack configurations, then GPU time of FSRCNN by bench.gpu_time,
# each as far as the ~250 s the session's device time left allow.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { grep -B2 -A5 error $OUT/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
timeout 90 python3 -m pytest -q tests/kernels -k "(stack or decoder or pick) and not compute_sanitizer" \
  -p no:cacheprovider > $OUT/g-tests.txt 2>&1; grep -E "^E  .*error|FAILED|passed|failed" $OUT/g-tests.txt | head -10
echo "t $((SECONDS - t0)) s"
for tool in memcheck racecheck; do
  [ $((SECONDS - t0)) -lt 200 ] || break
  CONVT_SANITIZE_ALGOS=stack timeout $((240 - SECONDS + t0)) compute-sanitizer --tool=$tool --error-exitcode=99 python3 \
    tests/kernels/sanitize_cases.py > $OUT/g-$tool.txt 2>&1; echo "$tool rc $?"; tail -n 1 $OUT/g-$tool.txt
  echo "t $((SECONDS - t0)) s"
done
if [ $((SECONDS - t0)) -lt 200 ]; then
  timeout 50 python3 -m bench.gpu_time --cases fsrcnn-56-1-n1,probe-fsrcnn-n4-128 --modes fp32,fp16 --algos auto \
    > $OUT/g-gpu-time.txt 2>&1; tail -6 $OUT/g-gpu-time.txt
fi
rm -f $OUT/build.txt
echo "all $((SECONDS - t0)) s"
