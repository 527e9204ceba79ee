#!/bin/bash
# session 69 call B (H100, right after call A on the same warm machine, its build kept): the stack sanitizers,
# bench.gpu_time on the batch-1 layers, then part B of the GPU suite, on the kernel call A kept.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
pack() { cd $OUT && tar czf /tmp/s69b.tgz . && rm -rf $OUT/* && mv /tmp/s69b.tgz $OUT/; }
[ -e /tmp/s69-v65 ] && { echo "v65 (call A's gate)"; cp .exp69/v65.cu kernels/csrc/cuda/convt_stack.cu; }
python3 -m kernels build > $OUT/b-build.txt 2>&1; echo "build rc $? $((SECONDS - t0)) s"
for tool in memcheck racecheck; do
  CONVT_SANITIZE_ALGOS=stack timeout 70 compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py \
    > $OUT/b-$tool.txt 2>&1; echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/b-$tool.txt | tail -1) $((SECONDS - t0)) s"
done
timeout 90 python3 -m bench.gpu_time --cases unet-128-64-n1,fsrcnn-56-1-n1,dcgan-128-64-n1 --modes fp32,fp16,bf16 --algos auto \
  > $OUT/b-gpu-time.txt 2>&1; echo "gpu_time rc $? $((SECONDS - t0)) s"; tail -12 $OUT/b-gpu-time.txt
timeout 330 pytest -q tests/kernels -k "not (random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack) and not compute_sanitizer" \
  -p no:cacheprovider > $OUT/b-tests-b.txt 2>&1; echo "part B rc $?: $(tail -1 $OUT/b-tests-b.txt) $((SECONDS - t0)) s"
grep -E "^FAILED" $OUT/b-tests-b.txt | head
pack
