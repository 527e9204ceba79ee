#!/bin/bash
# (.exp67/v64.cu = a7f5b1f's convt_stack.cu; the tree = .exp67/skipks.cu: v64 + TF32's warpgroup 1 skipping its last
# k-step's wgmma where the group's channels leave it all padding (FSRCNN: 56 channels, 7 k-steps of 8).)
# session 67 call E: the two side by side on the TF32 cases (the half types' code is unchanged); then the main build
# on the tree, part A of the GPU suite, the decoder and pick tests, the stack sanitizers, and bench.run.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 docs/patches/s64/trace_ab.py $OUT "v64:@.exp67/v64.cu;skipks:" \
  fsrcnn-56-1-n1,probe-fsrcnn-n4-128,probe-fsrcnn-n2-192,probe-dcgan-64-3-128,dcgan-64-3-n64,probe-128-4-k6s2-g2-n2 \
  fp32 5 10 > $OUT/e-ab.txt 2>&1
echo "ab rc $? $((SECONDS - t0)) s"; grep -E "^\|" $OUT/e-ab.txt
python3 -m kernels build > $OUT/e-build.txt 2>&1 || { grep -B2 -A5 error $OUT/e-build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
timeout 120 pytest -q tests/kernels -k "random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack" \
  -p no:cacheprovider > $OUT/e-tests-a.txt 2>&1
echo "part A rc $?: $(tail -1 $OUT/e-tests-a.txt) $((SECONDS - t0)) s"
timeout 60 pytest -q tests/kernels -k "(decoder or pick) and not stack and not compute_sanitizer" -p no:cacheprovider \
  > $OUT/e-tests-dp.txt 2>&1
echo "decoder/pick rc $?: $(tail -1 $OUT/e-tests-dp.txt) $((SECONDS - t0)) s"
for tool in memcheck racecheck; do
  CONVT_SANITIZE_ALGOS=stack timeout 60 compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py \
    > $OUT/e-$tool.txt 2>&1; echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/e-$tool.txt | tail -1)"
done
timeout 90 python3 -m bench.run --out $OUT/bench > $OUT/e-bench.txt 2>&1; echo "bench rc $? $((SECONDS - t0)) s"
grep -iE "geomean|geometric" $OUT/e-bench.txt | head -8
echo "all $((SECONDS - t0)) s"
cd $OUT && tar czf /tmp/s67e.tgz . && rm -rf $OUT/* && mv /tmp/s67e.tgz $OUT/
