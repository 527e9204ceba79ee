#!/bin/bash
# session 59 call D: compute-sanitizer memcheck and racecheck over every sanitizer config (one a path), both at once,
# on the landed split (the window configs alone ran clean in call B)
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { grep -B2 -A5 error /tmp/o/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
left=$((570 - SECONDS + t0))
for tool in memcheck racecheck; do
  ( timeout $left compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py \
      > /tmp/o/san-all-$tool.txt 2>&1; echo "$tool rc $? at $((SECONDS - t0)) s" >> /tmp/o/san-all-$tool.txt ) &
done
wait
for tool in memcheck racecheck; do tail -2 /tmp/o/san-all-$tool.txt; done
(cd /tmp/o && tar czf $OUT/s59d.tgz .)
echo "all $((SECONDS - t0)) s"
