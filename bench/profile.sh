#!/usr/bin/env bash
# Nsight Compute on the GPU machine: speed-of-light, occupancy, launch stats and
# warp stalls of our kernel on the given cases. Usage: bash bench/profile.sh kb81 kb57 ...
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONPATH="$PWD" TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
python3 -m kernels build > /dev/null
for c in "$@"; do
  # NCU_KERNEL picks the kernel (the tensor-core path launches pack and layout kernels first).
  ncu --clock-control none --kernel-name "${NCU_KERNEL:-regex:convt}" -c 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
      --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
      --section SchedulerStats --section InstructionStats python3 -m bench.profile_one "$c" \
      > "$OUT/ncu-$c${NCU_TAG:-}.txt" 2>&1
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Grid Size|Block Limit Reg|Warp Cycles Per Issued|Waves Per SM|L1/TEX Hit|L2 Hit" "$OUT/ncu-$c${NCU_TAG:-}.txt" | sed "s/^/$c${NCU_TAG:-} /"
done
