#!/bin/bash
# .exp66/ is untracked: each copy there is the tree's convt_stack.cu with one of this folder's patches applied
# (v63.cu = fb77776's file, v64.cu = 530d3f9's, whose device code is 85b3951's).
# session 66 call C, on the tree with v64 (85b3951) (the TF32 col2im's output offset stepped a cell row): the landed form beside
# v63 (.exp66/v63.cu = the previous commit's convt_stack.cu) by trace_ab, bench.gpu_time and bench.run, then part A of
# the GPU suite (every stack test), the decoder and pick tests, and memcheck and racecheck on the stack configurations.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { grep -B2 -A5 error $OUT/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 docs/patches/s64/trace_ab.py $OUT "v63:@.exp66/v63.cu;v64:" \
  fsrcnn-56-1-n1,probe-fsrcnn-n4-128,probe-fsrcnn-n2-192,probe-dcgan-64-3-128,dcgan-64-3-n64,probe-128-4-k6s2-g2-n2 \
  fp32,fp16 5 10 > $OUT/c-ab.txt 2>&1; echo "ab rc $? $((SECONDS - t0)) s"; grep -E "^\|" $OUT/c-ab.txt
python3 -m bench.gpu_time --cases fsrcnn-56-1-n1,probe-fsrcnn-n4-128,unet-128-64-n1,dcgan-128-64-n1 --modes fp32,fp16 \
  --algos auto > $OUT/c-gpu-time.txt 2>&1; echo "gpu_time rc $?"; tail -9 $OUT/c-gpu-time.txt
python3 -m bench.run --out $OUT/bench > $OUT/c-bench-run.txt 2>&1; echo "bench.run rc $? $((SECONDS - t0)) s"
grep -E "Geometric mean speedup, KernelBench|decoder layers" $OUT/c-bench-run.txt
pytest -q tests/kernels -k "random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack" \
  -p no:cacheprovider > $OUT/c-tests-a.txt 2>&1; echo "part A rc $?: $(tail -1 $OUT/c-tests-a.txt) $((SECONDS - t0)) s"
pytest -q tests/kernels -k "(decoder or pick) and not stack and not compute_sanitizer" -p no:cacheprovider \
  > $OUT/c-tests-dp.txt 2>&1; echo "decoder/pick rc $?: $(tail -1 $OUT/c-tests-dp.txt)"
for tool in memcheck racecheck; do
  CONVT_SANITIZE_ALGOS=stack compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py \
    > $OUT/c-$tool.txt 2>&1; echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/c-$tool.txt | tail -1)"
done
cd $OUT && tar czf c-out.tgz bench c-*.txt build.txt && rm -rf bench c-tests-a.txt c-tests-dp.txt c-memcheck.txt c-racecheck.txt build.txt
echo "all $((SECONDS - t0)) s"
