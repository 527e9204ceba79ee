#!/bin/bash
# (to rebuild .exp67/: NAME.cu = a7f5b1f's convt_stack.cu with docs/patches/s67/stack-NAME.patch applied; keep.cu with
# docs/patches/s66/stack-keep-offsets-only.patch; qfkeep.cu with both; the tree in a call is the copy it names.)
# .exp67/ is untracked: v64.cu = a7f5b1f's convt_stack.cu; the tree (erelw, = .exp67/erelw.cu) releases a ring slot
# through an `empty` mbarrier as soon as every warp has taken its row (each lane fences its reads to the async proxy,
# lane 0 of each warp arrives: 8 arrivals), and thread 0 refills it then, rather than after the cell row's closing
# barrier; erelt: the same with every thread arriving (256).
# session 67 call B: side by side on the ring (TF32) cases; FSRCNN with one input (L2-resident) against five; then
# the main build on the tree, the stack tests and the sanitizers.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 docs/patches/s64/trace_ab.py $OUT "v64:@.exp67/v64.cu;erelw:;erelt:-DSTACK_REL_THREADS=1" \
  fsrcnn-56-1-n1,probe-fsrcnn-n4-128,probe-fsrcnn-n2-192,probe-dcgan-64-3-128 fp32 5 10 > $OUT/b-ab.txt 2>&1
echo "ab rc $? $((SECONDS - t0)) s"; grep -E "^\|" $OUT/b-ab.txt
python3 docs/patches/s64/trace_ab.py $OUT "v64:@.exp67/v64.cu;erelw:" fsrcnn-56-1-n1 fp32 1 10 > $OUT/b-ab-l2.txt 2>&1
echo "ab one input rc $? $((SECONDS - t0)) s"; grep -E "^\|" $OUT/b-ab-l2.txt
python3 -m kernels build > $OUT/b-build.txt 2>&1 || { grep -B2 -A5 error $OUT/b-build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
timeout 150 pytest -q tests/kernels -k "stack and not compute_sanitizer" -p no:cacheprovider > $OUT/b-tests.txt 2>&1
echo "stack tests rc $?: $(tail -1 $OUT/b-tests.txt) $((SECONDS - t0)) s"
for tool in memcheck racecheck synccheck; do
  CONVT_SANITIZE_ALGOS=stack timeout 60 compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py \
    > $OUT/b-$tool.txt 2>&1; echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/b-$tool.txt | tail -1)"
done
echo "all $((SECONDS - t0)) s"
cd $OUT && tar czf /tmp/s67b.tgz . && rm -rf $OUT/* && mv /tmp/s67b.tgz $OUT/
