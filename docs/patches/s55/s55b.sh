#!/bin/bash
# session 55 call B: v52 (the window kernel's fp32 raw rows by TMA, its fp32 epilogue stored as the accumulators lie):
# build; the window kernel's tests and sanitizer runs; GPU time with TMA and with cp.async beside dwnp8 and cuDNN;
# Nsight Compute of kb71 TF32 on v52
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { tail -30 /tmp/o/build.txt; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 -m pytest -q tests/kernels -k "dwin or (kernelbench_problem and auto)" -p no:cacheprovider 2>&1 | tail -4 | tee /tmp/o/gpu-tests.txt
echo "tests $((SECONDS - t0)) s"
C="kb71,kb78,probe-32-32-k3-n2,probe-16-32-k3x2-n4,probe-64-64-k3-g2-n8,probe-32-24-k3x4-n1"
python3 -m bench.gpu_time --cases $C --modes fp32,fp16 --algos auto,dwin,dwnp8 2>&1 | tee /tmp/o/gpu-time.txt
CONVT_DWIN_TMA=0 python3 -m bench.gpu_time --cases $C --modes fp32 --algos dwin 2>&1 | tee /tmp/o/gpu-time-cpasync.txt
echo "times $((SECONDS - t0)) s"
for tool in memcheck racecheck; do
  CONVT_SANITIZE_ALGOS=dwin compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py > /tmp/o/san-$tool.txt 2>&1
  echo "$tool rc $? $(tail -1 /tmp/o/san-$tool.txt)"
done | tee -a /tmp/o/gpu-tests.txt
echo "sanitizer $((SECONDS - t0)) s"
ncu --clock-control none -k regex:convt_dwin_kernel -c 1 --section SourceCounters --section WarpStateStats \
  --section SpeedOfLight --section InstructionStats --section Occupancy --section SchedulerStats \
  --section MemoryWorkloadAnalysis -o /tmp/o/kb71 python3 -m bench.profile_one kb71 > /tmp/o/ncu-log.txt 2>&1
ncu -i /tmp/o/kb71.ncu-rep --page details > /tmp/o/ncu-kb71-tf32-dwin-s55b.txt 2>&1
ncu -i /tmp/o/kb71.ncu-rep --page source --csv --print-source sass > /tmp/o/src.csv 2>/dev/null
python3 -m bench.ncu_regions /tmp/o/src.csv > /tmp/o/regions.txt 2>&1
grep -E "^ +Duration|Executed Instructions  |Issue Slots Busy|DRAM Throughput|Registers Per|Eligible Warps" /tmp/o/ncu-kb71-tf32-dwin-s55b.txt
echo "ncu $((SECONDS - t0)) s"
tar czf $OUT/s55b.tgz -C /tmp/o .
cat /tmp/o/gpu-time.txt /tmp/o/gpu-time-cpasync.txt
echo "all $((SECONDS - t0)) s"
