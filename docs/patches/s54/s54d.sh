#!/bin/bash
# session 54 call D: v51c (the cp.async staging and its rounding over every (staged row, piece) of the block at once):
# build, GPU time beside cuDNN, the strip kernel's tests and sanitizer runs, bench.run, kb75's instruction count
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { tail -30 /tmp/o/build.txt; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 -m bench.gpu_time --cases kb75,kb81 --modes fp32,fp16,bf16 --algos auto 2>&1 | tee /tmp/o/gpu-time.txt
echo "times $((SECONDS - t0)) s"
python3 -m pytest -q tests/kernels -k "strip or pick or (kernelbench_problem and auto)" -p no:cacheprovider 2>&1 | tail -4 | tee /tmp/o/gpu-tests.txt
echo "tests $((SECONDS - t0)) s"
for tool in memcheck racecheck; do
  CONVT_SANITIZE_ALGOS=strip,strip32 compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py > /tmp/o/san-$tool.txt 2>&1
  echo "$tool rc $? $(tail -1 /tmp/o/san-$tool.txt)"
done | tee -a /tmp/o/gpu-tests.txt
echo "sanitizer $((SECONDS - t0)) s"
python3 -m bench.run --out /tmp/o/bench > /tmp/o/bench-run.txt 2>&1; echo "bench.run rc $?"
echo "bench $((SECONDS - t0)) s"
for c in kb75 kb81; do
  ncu --clock-control none -k regex:convt_strip -c 1 --section SpeedOfLight --section InstructionStats --section Occupancy \
    --section SchedulerStats python3 -m bench.profile_one $c > /tmp/o/ncu-$c-tf32-s54d.txt 2>&1
  grep -E "Duration|Executed Instructions  |Issue Slots Busy|DRAM Throughput|Achieved Occupancy" /tmp/o/ncu-$c-tf32-s54d.txt | sed "s/^/$c /"
done
python3 -m pytest -q tests/kernels -k "random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack" -p no:cacheprovider 2>&1 | tail -3 | tee -a /tmp/o/gpu-tests.txt
echo "part A $((SECONDS - t0)) s"
tar czf $OUT/s54d.tgz -C /tmp/o .
tail -60 /tmp/o/bench-run.txt | grep -E "kb75|kb81|geomean|Geomean|KernelBench|decoder" | head -20
echo "all $((SECONDS - t0)) s"
