#!/bin/bash
# session 57 call B: sanitizers on adb25b7's input_map (window, stack, halo kernels), tree without the patch
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > /tmp/build.txt 2>&1 || { grep -B2 -A5 error /tmp/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
for tool in memcheck racecheck; do
  CONVT_SANITIZE_ALGOS=dwin,stack,wgh32,wgh128,wgh64s timeout 200 compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py > /tmp/san-$tool.txt 2>&1
  echo "$tool rc $? $(tail -1 /tmp/san-$tool.txt) $((SECONDS - t0)) s"
done
