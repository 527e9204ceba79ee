#!/bin/bash
# session 54 call B: v51 (the strip kernel's k-step table, TF32 input rounded at staging): build, GPU time beside
# cuDNN, the strip kernel's tests and sanitizer runs, per-line instruction counts of kb75 TF32
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
src() {  # case dtype tag
  CONVT_PROFILE_DTYPE=$2 ncu --clock-control none -k regex:convt_strip -c 1 --section SourceCounters --section WarpStateStats \
    --section SpeedOfLight --section InstructionStats -o /tmp/rep-$3 -f python3 -m bench.profile_one $1 > /tmp/o/ncu-$3.log 2>&1
  ncu -i /tmp/rep-$3.ncu-rep --page source --csv --print-source sass > /tmp/o/sass-$3.csv 2>/dev/null
  ncu -i /tmp/rep-$3.ncu-rep --page details > /tmp/o/details-$3.txt 2>/dev/null
  echo "== $3"; grep -E "Duration|Executed Instructions  |Issue Slots Busy|DRAM Throughput" /tmp/o/details-$3.txt | head -5
  python3 -m bench.ncu_opcodes /tmp/o/sass-$3.csv > /tmp/o/opcodes-$3.txt 2>&1; head -12 /tmp/o/opcodes-$3.txt
  python3 -m bench.ncu_regions /tmp/o/sass-$3.csv 0x200 > /tmp/o/regions-$3.txt 2>&1
}
src kb75 fp32 kb75-tf32
src kb81 fp32 kb81-tf32
tar czf $OUT/s54b.tgz -C /tmp/o .
echo "all $((SECONDS - t0)) s"
