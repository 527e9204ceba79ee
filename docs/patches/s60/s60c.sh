#!/bin/bash
# session 60 call C: why the edge kernel takes ~20 us a block (call B: kb71's edge 38 us, a 34-block edge ~20 us
# whether or not its staging was batched). Nsight Compute on the edge kernel alone, a small layer and kb71.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { grep -B2 -A5 error /tmp/o/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
S="--section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --section SchedulerStats --section SourceCounters --section InstructionStats"
CONVT_DWIN_SPLIT=1 ncu --kernel-name regex:convt_edge -c 1 $S python3 docs/patches/s60/edge_kernels.py probe-32-32-k3-n2 fp32 > /tmp/o/ncu-edge-probe32.txt 2>&1
ncu --kernel-name regex:convt_edge -c 1 $S python3 docs/patches/s60/edge_kernels.py kb71 fp32 > /tmp/o/ncu-edge-kb71.txt 2>&1
for f in /tmp/o/ncu-edge-*.txt; do echo "== $f"; grep -E "Duration|Elapsed Cycles|Executed Ipc A|Issue Slots Busy|Warp Cycles Per Issued|No Eligible|Active Warps Per|Registers Per|Achieved Occ|Theoretical Occ|Mem Busy|DRAM Throughput|L1/TEX Hit|L2 Hit|Executed Instructions  |Stall|Block Limit|Waves" $f | head -40; done
(cd /tmp/o && tar czf $OUT/s60c.tgz .)
echo "all $((SECONDS - t0)) s"
