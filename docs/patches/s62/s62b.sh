#!/bin/bash
# session 62 call B, on e57c35d (the edge kernel beside the window kernel): the beside test by name; bench.run (the
# results of record); bench.gpu_time on kb71 and the probes that split (auto against cuDNN); part A of the GPU suite
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { grep -B2 -A5 error $OUT/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 -m pytest -v -rs tests/kernels -k "beside" -p no:cacheprovider 2>&1 | grep -E "PASS|FAIL|SKIP|passed|failed" \
  | tee $OUT/beside-test.txt
python3 -m bench.run --out $OUT/bench > $OUT/bench-run.txt 2>&1; echo "bench.run rc $?"
echo "t $((SECONDS - t0)) s"
python3 -m bench.gpu_time --cases kb71,probe-kb71-n2,probe-kb78-p12 --modes fp32,fp16 --algos auto \
  > $OUT/gpu-time.txt 2>&1; cat $OUT/gpu-time.txt
echo "t $((SECONDS - t0)) s"
A="random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack"
timeout $((590 - SECONDS + t0)) python3 -m pytest -q tests/kernels -k "$A" -p no:cacheprovider > $OUT/part-a.txt 2>&1
echo "part A rc $?"; grep -E "FAILED|ERROR|passed|failed" $OUT/part-a.txt | tail -5
grep -E "geomean|KernelBench|Strict|fp16|bf16|Decoder" $OUT/bench-run.txt | tail -12
grep -E "^\| kb" $OUT/bench-run.txt | head -7
echo "all $((SECONDS - t0)) s"
