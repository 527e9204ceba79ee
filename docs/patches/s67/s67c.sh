#!/bin/bash
# (to rebuild .exp67/: NAME.cu = a7f5b1f's convt_stack.cu with docs/patches/s67/stack-NAME.patch applied; keep.cu with
# docs/patches/s66/stack-keep-offsets-only.patch; qfkeep.cu with both; the tree in a call is the copy it names.)
# .exp67/ is untracked: v64.cu = a7f5b1f's convt_stack.cu; box104.cu = v64 with a 104-column ring box (44% more bytes
# a ring row; 110 KB a block, so 28 KB of L1 at two blocks an SM).
# session 67 call C (diagnostics, no candidate): are the TF32 ring kernel's cell rows bound by L2-to-SM bytes? The
# two side by side on FSRCNN, then Nsight Compute's throughput sections on v64 (trace build) for FSRCNN TF32.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 docs/patches/s64/trace_ab.py $OUT "v64:@.exp67/v64.cu;box104:@.exp67/box104.cu" \
  fsrcnn-56-1-n1,probe-fsrcnn-n4-128 fp32 5 10 > $OUT/c-ab.txt 2>&1
echo "ab rc $? $((SECONDS - t0)) s"; grep -E "^\|" $OUT/c-ab.txt
timeout 240 ncu --clock-control none --kernel-name regex:convt_stack --launch-skip 3 -c 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
  --section ComputeWorkloadAnalysis --section LaunchStats --section Occupancy \
  --metrics lts__t_bytes.sum.per_second,lts__t_sectors_srcunit_tex.sum,dram__bytes_read.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed \
  python3 docs/patches/s67/ncu_one.py v64 @.exp67/v64.cu fsrcnn-56-1-n1 fp32 > $OUT/c-ncu-fsrcnn-v64.txt 2>&1
echo "ncu rc $? $((SECONDS - t0)) s"
grep -E "Duration|Throughput|Bandwidth|bytes|sectors|gmma|Hit Rate|Busy|Mem Pipes|per_second" $OUT/c-ncu-fsrcnn-v64.txt | head -60
echo "all $((SECONDS - t0)) s"
cd $OUT && tar czf /tmp/s67c.tgz . && rm -rf $OUT/* && mv /tmp/s67c.tgz $OUT/
