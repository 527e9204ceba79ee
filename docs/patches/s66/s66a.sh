#!/bin/bash
# session 66 call A, on the tree (v63): the run of record (bench.run), bench.gpu_time on the batch-1 decoder layers,
# Nsight Compute's per-instruction stall samples of FSRCNN TF32 on the stack kernel (the target still missed on the
# H100), then part A of the GPU suite and the stack configurations under memcheck and racecheck.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { grep -B2 -A5 error $OUT/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,temperature.gpu --format=csv > $OUT/smi.txt 2>&1
python3 -m bench.run --out $OUT/bench > $OUT/bench-run.txt 2>&1; echo "bench.run rc $? $((SECONDS - t0)) s"
python3 -m bench.gpu_time --cases fsrcnn-56-1-n1,probe-fsrcnn-n4-128,unet-128-64-n1,dcgan-128-64-n1 --modes fp32,fp16 \
  --algos auto > $OUT/gpu-time.txt 2>&1; echo "gpu_time rc $? $((SECONDS - t0)) s"
ncu --clock-control none --kernel-name regex:convt_stack --launch-skip 2 -c 1 --warp-sampling-interval 0 \
  --section WarpStateStats --section SourceCounters --section SchedulerStats --section SpeedOfLight \
  --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --import-source no \
  -o $OUT/ncu-fsrcnn-tf32 python3 -m bench.profile_one fsrcnn-56-1-n1 > $OUT/ncu-run.txt 2>&1; echo "ncu rc $?"
ncu -i $OUT/ncu-fsrcnn-tf32.ncu-rep --page details > $OUT/ncu-details.txt 2>&1
ncu -i $OUT/ncu-fsrcnn-tf32.ncu-rep --page source --csv --print-source sass > $OUT/ncu-sass.csv 2>&1
echo "ncu done $((SECONDS - t0)) s"
pytest -q tests/kernels -k "random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack" \
  -p no:cacheprovider > $OUT/tests-a.txt 2>&1; echo "part A rc $?: $(tail -1 $OUT/tests-a.txt) $((SECONDS - t0)) s"
for tool in memcheck racecheck; do
  CONVT_SANITIZE_ALGOS=stack compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py \
    > $OUT/sanitize-$tool.txt 2>&1; echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|hazard' $OUT/sanitize-$tool.txt | tail -1)"
done
grep -E "Duration|Warp Cycles Per Issued|Issued Warp|Eligible|Active Warps Per|DRAM Throughput|L2 Cache Throughput|Registers Per" $OUT/ncu-details.txt | head -12
cat $OUT/gpu-time.txt | tail -12
tail -25 $OUT/bench-run.txt
echo "all $((SECONDS - t0)) s"
