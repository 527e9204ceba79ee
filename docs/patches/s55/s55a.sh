#!/bin/bash
# session 55 call A: build; the strip kernel's tests and sanitizer runs after staged_piece (a refactor);
# kb71's GPU time (window kernel against dwnp8 and cuDNN); Nsight Compute of the window kernel on kb71 TF32 and fp16
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { tail -30 /tmp/o/build.txt; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 -m pytest -q tests/kernels -k "strip or pick or (kernelbench_problem and auto)" -p no:cacheprovider 2>&1 | tail -3 | tee /tmp/o/gpu-tests.txt
for tool in memcheck racecheck; do
  CONVT_SANITIZE_ALGOS=strip,strip32 compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py > /tmp/o/san-$tool.txt 2>&1
  echo "$tool rc $? $(tail -1 /tmp/o/san-$tool.txt)"
done | tee -a /tmp/o/gpu-tests.txt
echo "tests $((SECONDS - t0)) s"
python3 -m bench.gpu_time --cases kb71 --modes fp32,fp16 --algos auto,dwin,dwnp8 2>&1 | tee /tmp/o/gpu-time.txt
echo "times $((SECONDS - t0)) s"
ncu --clock-control none -k regex:convt_dwin_kernel -c 1 --section SourceCounters --section WarpStateStats \
  --section SpeedOfLight --section InstructionStats --section Occupancy --section SchedulerStats \
  --section MemoryWorkloadAnalysis --section LaunchStats -o /tmp/o/kb71 python3 -m bench.profile_one kb71 > /tmp/o/ncu-log.txt 2>&1
ncu -i /tmp/o/kb71.ncu-rep --page details > /tmp/o/ncu-kb71-tf32-dwin-s55a.txt 2>&1
ncu -i /tmp/o/kb71.ncu-rep --page source --csv --print-source sass > /tmp/o/src.csv 2>/dev/null
python3 -m bench.ncu_regions /tmp/o/src.csv > /tmp/o/regions.txt 2>&1
CONVT_PROFILE_DTYPE=fp16 ncu --clock-control none -k regex:convt_dwin_kernel -c 1 --section SpeedOfLight --section WarpStateStats \
  --section InstructionStats --section SchedulerStats python3 -m bench.profile_one kb71 > /tmp/o/ncu-kb71-fp16-dwin-s55a.txt 2>&1
for f in ncu-kb71-tf32-dwin-s55a ncu-kb71-fp16-dwin-s55a; do
  grep -E "^ +Duration|Executed Instructions  |Issue Slots Busy|DRAM Throughput|Achieved Occupancy|Registers Per|Eligible Warps|Stall" /tmp/o/$f.txt | head -14 | sed "s/^/$f /"
done
echo "ncu $((SECONDS - t0)) s"
tar czf $OUT/s55a.tgz -C /tmp/o .
head -60 /tmp/o/regions.txt
echo "all $((SECONDS - t0)) s"
