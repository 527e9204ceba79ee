#!/bin/bash
# session 54 call A: the heuristic's DRAM-rate fold (pick tests), then per-line instruction counts of the strip
# kernel (kb75 TF32 and fp16, kb81 TF32) and the window kernel's profile on kb71 TF32
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 -m pytest -q -x tests/kernels -k "pick or (kernelbench_problem and auto)" 2>&1 | tail -3
echo "tests $((SECONDS - t0)) s"
src() {  # case dtype tag kernel-regex
  CONVT_PROFILE_DTYPE=$2 ncu --clock-control none -k "$4" -c 1 --section SourceCounters --section WarpStateStats \
    --section SpeedOfLight --section InstructionStats -o /tmp/rep-$3 -f python3 -m bench.profile_one $1 > /tmp/ncu-$3.log 2>&1
  ncu -i /tmp/rep-$3.ncu-rep --page source --csv --print-source sass > /tmp/sass-$3.csv 2>/dev/null
  ncu -i /tmp/rep-$3.ncu-rep --page source --csv --print-source cuda > $OUT/cuda-$3.csv 2>/dev/null
  ncu -i /tmp/rep-$3.ncu-rep --page details > $OUT/details-$3.txt 2>/dev/null
  echo "== $3"; grep -E "Duration|Executed Instructions  |Issue Slots Busy|DRAM Throughput" $OUT/details-$3.txt | head -5
  python3 -m bench.ncu_opcodes /tmp/sass-$3.csv > $OUT/opcodes-$3.txt 2>&1; head -14 $OUT/opcodes-$3.txt
  python3 -m bench.ncu_regions /tmp/sass-$3.csv > $OUT/regions-$3.txt 2>&1
  gzip -c /tmp/sass-$3.csv > $OUT/sass-$3.csv.gz
  echo "t $((SECONDS - t0)) s"
}
src kb75 fp32 kb75-tf32 regex:convt_strip
src kb75 fp16 kb75-fp16 regex:convt_strip
src kb81 fp32 kb81-tf32 regex:convt_strip
NCU_KERNEL=regex:convt_dwin_kernel NCU_TAG=-dwin-s54 OUT=$OUT bash bench/profile.sh kb71 2>&1 | tail -16
echo "all $((SECONDS - t0)) s"
