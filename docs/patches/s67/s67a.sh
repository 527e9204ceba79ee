#!/bin/bash
# (to rebuild .exp67/: NAME.cu = a7f5b1f's convt_stack.cu with docs/patches/s67/stack-NAME.patch applied; keep.cu with
# docs/patches/s66/stack-keep-offsets-only.patch; qfkeep.cu with both; the tree in a call is the copy it names.)
# .exp67/ is untracked: v64.cu = a7f5b1f's convt_stack.cu; keep.cu = v64 + docs/patches/s66/stack-keep-offsets-only.patch;
# qf.cu (the tree in this call) = v64 with the col2im's items ordered (co, r, cell column, q), q fastest, so a warp's
# stores are consecutive output columns rather than sw apart; qfkeep.cu = both.
# session 67 call A: the four side by side by trace_ab; then the main build on qf, the stack tests and sanitizers.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 docs/patches/s64/trace_ab.py $OUT "v64:@.exp67/v64.cu;keep:@.exp67/keep.cu;qf:;qfkeep:@.exp67/qfkeep.cu" \
  fsrcnn-56-1-n1,probe-fsrcnn-n4-128,probe-fsrcnn-n2-192,probe-dcgan-64-3-128,dcgan-64-3-n64,probe-128-4-k6s2-g2-n2 \
  fp32,fp16 5 10 > $OUT/a-ab.txt 2>&1; echo "ab rc $? $((SECONDS - t0)) s"; grep -E "^\|" $OUT/a-ab.txt
python3 -m kernels build > $OUT/a-build.txt 2>&1 || { grep -B2 -A5 error $OUT/a-build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
timeout 150 pytest -q tests/kernels -k "stack and not compute_sanitizer" -p no:cacheprovider > $OUT/a-tests.txt 2>&1
echo "stack tests rc $?: $(tail -1 $OUT/a-tests.txt) $((SECONDS - t0)) s"
for tool in memcheck racecheck; do
  CONVT_SANITIZE_ALGOS=stack timeout 60 compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py \
    > $OUT/a-$tool.txt 2>&1; echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/a-$tool.txt | tail -1)"
done
echo "all $((SECONDS - t0)) s"
cd $OUT && tar czf /tmp/s67a.tgz . && rm -rf $OUT/* && mv /tmp/s67a.tgz $OUT/
