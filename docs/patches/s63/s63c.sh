#!/bin/bash
# session 63 call C: the stack kernel's weight loads issued before its first rows (CONVT_STACK_WFIRST=1; TF32 on the
# ring, 3 height offsets) against the tree's order; its tests; ab.py's A/B with a profiled call each.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { grep -B2 -A5 error $OUT/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
CONVT_STACK_WFIRST=1 python3 -m pytest -q tests/kernels -k "stack_decoder or stack_ring" -p no:cacheprovider \
  > $OUT/stack-wfirst.txt 2>&1; grep -E "^E  .*error|FAILED|passed|failed" $OUT/stack-wfirst.txt | head -10
python3 docs/patches/s63/ab.py $OUT CONVT_STACK_WFIRST 0,1 fsrcnn-56-1-n1,probe-fsrcnn-n4-128 fp32 2>&1 \
  | tee $OUT/wfirst.txt | grep -v "^  "
grep "^  " $OUT/wfirst.txt | grep "fsrcnn-56-1-n1" | head -8
python3 docs/patches/s63/ab.py $OUT CONVT_STACK_WFIRST 0,1 fsrcnn-56-1-n1 fp32 2>&1 | tee $OUT/wfirst2.txt | tail -3
rm -f $OUT/*.json
echo "all $((SECONDS - t0)) s"
