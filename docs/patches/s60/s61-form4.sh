#!/bin/bash
# For a later session's device call (written in session 60, not yet run): the edge kernel's fourth form
# (edge-kernel-form4.patch, applied here to the device's copy of the tree), tested and timed as call E timed form 3:
# window tests, dwin sanitizers, the kernels' own times, GPU time with the rule and the split off, part A, then ncu on
# kb71's edge (v57's hypothesis: warps a scheduler and cycles an instruction). Outputs straight to $OUT.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
git apply docs/patches/s60/edge-kernel-form4.patch || exit 1
python3 -m kernels build > $OUT/build.txt 2>&1 || { grep -B2 -A5 error $OUT/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
{
  echo "== window tests"; python3 -m pytest -q tests/kernels -k "dwin or pick or (kernelbench_problem and auto)" -p no:cacheprovider 2>&1 | grep -E "FAILED|passed|failed|Error" | head -20
  for tool in memcheck racecheck; do
    CONVT_SANITIZE_ALGOS=dwin compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py > $OUT/san-$tool.txt 2>&1
    echo "$tool rc $? $(tail -1 $OUT/san-$tool.txt)"
  done
  echo "t $((SECONDS - t0)) s"
  for m in fp32 fp16; do python3 docs/patches/s60/edge_kernels.py kb71 $m 2>&1 | grep -v "Warn\|warn"; done
  CONVT_DWIN_SPLIT=1 python3 docs/patches/s60/edge_kernels.py probe-32-32-k3-n2 fp32 2>&1 | grep -v "Warn\|warn"
  C=kb71,probe-kb71-n2,probe-kb78-p12,probe-32-32-k3-n2
  for sp in rule 0; do
    echo "== auto, split $sp"
    if [ $sp = rule ]; then e=""; else e="CONVT_DWIN_SPLIT=$sp"; fi
    env $e python3 -m bench.gpu_time --cases $C --modes fp32,fp16 --algos auto 2>&1 | tail -10
  done
  echo "t $((SECONDS - t0)) s"
  echo "== part A"; python3 -m pytest -q tests/kernels -k "random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack" -p no:cacheprovider 2>&1 | tail -1
  echo "t $((SECONDS - t0)) s"
} 2>&1 | tee $OUT/land.txt
ncu --kernel-name regex:convt_edge -c 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
  --section Occupancy --section LaunchStats python3 docs/patches/s60/edge_kernels.py kb71 fp32 > $OUT/ncu-edge-kb71.txt 2>&1
grep -E "Duration|Warp Cycles Per Issued|Active Warps Per Scheduler|Achieved Occ|Executed Ipc A" $OUT/ncu-edge-kb71.txt
