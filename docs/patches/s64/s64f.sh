#!/bin/bash
# session 64 call F: v62 as the tree has it (the blocks dispatched after the first one an SM ask for their first ring
# row at their start): beside the tree before it (c384b89's convt_stack.cu), the stack tests, memcheck and racecheck
# over the stack configurations. .exp64/convt_stack_c384b89.cu (untracked, travels with the tree) was made by
# `git show c384b89:kernels/csrc/cuda/convt_stack.cu > .exp64/convt_stack_c384b89.cu`.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { grep -B2 -A5 error $OUT/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 docs/patches/s64/trace_ab.py $OUT "before:@.exp64/convt_stack_c384b89.cu;v62:" \
  fsrcnn-56-1-n1,probe-fsrcnn-n4-128,probe-fsrcnn-n2-192 fp32,fp16 5 10 > $OUT/f-ab.txt 2>&1; tail -8 $OUT/f-ab.txt
echo "t $((SECONDS - t0)) s"
python3 -m pytest -q tests/kernels -k "stack and not compute_sanitizer" -p no:cacheprovider \
  > $OUT/f-tests.txt 2>&1; grep -E "^E  .*error|FAILED|passed|failed" $OUT/f-tests.txt | head -10
echo "t $((SECONDS - t0)) s"
for tool in memcheck racecheck; do
  CONVT_SANITIZE_ALGOS=stack timeout 100 compute-sanitizer --tool=$tool --error-exitcode=99 python3 \
    tests/kernels/sanitize_cases.py > $OUT/f-$tool.txt 2>&1; echo "$tool rc $?"; tail -n 1 $OUT/f-$tool.txt
done
rm -f $OUT/build.txt
echo "all $((SECONDS - t0)) s"
