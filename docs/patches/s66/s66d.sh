#!/bin/bash
# .exp66/ is untracked: each copy there is the tree's convt_stack.cu with one of this folder's patches applied
# (v63.cu = fb77776's file, v64.cu = 530d3f9's, whose device code is 85b3951's).
# session 66 call D: v64 with the stack kernel's per-thread offsets (the ring take's, the accumulators' store base, the
# ring issuer's test) kept in registers, so the compiler no longer re-reads %tid.x in every cell row (keep; the tree
# in this call), beside v64 (.exp66/v64.cu) by trace_ab; then the main build, the stack tests and the sanitizers on it.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 docs/patches/s64/trace_ab.py $OUT "v64:@.exp66/v64.cu;keep:" \
  fsrcnn-56-1-n1,probe-fsrcnn-n4-128,probe-fsrcnn-n2-192,probe-dcgan-64-3-128,dcgan-64-3-n64,probe-128-4-k6s2-g2-n2 \
  fp32,fp16 5 10 > $OUT/d-ab.txt 2>&1; echo "ab rc $? $((SECONDS - t0)) s"; grep -E "^\|" $OUT/d-ab.txt
python3 -m kernels build > $OUT/d-build.txt 2>&1 || { grep -B2 -A5 error $OUT/d-build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
pytest -q tests/kernels -k "stack and not compute_sanitizer" -p no:cacheprovider > $OUT/d-tests.txt 2>&1
echo "stack tests rc $?: $(tail -1 $OUT/d-tests.txt) $((SECONDS - t0)) s"
for tool in memcheck racecheck; do
  CONVT_SANITIZE_ALGOS=stack compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py \
    > $OUT/d-$tool.txt 2>&1; echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/d-$tool.txt | tail -1)"
done
echo "all $((SECONDS - t0)) s"
