#!/bin/bash
# Ran as session 59 call A: its patch kept layers the rule keeps whole cut to their full strips (6 window tests failed,
# probe-kb71-n2 not all written). Landed fixed in d80221d (kernel-notes v56); do not apply the patch again.
# For the next session's first call (written in session 58; compiled here, not run in this form): the narrow last
# strip launched alone by the cost model (docs/patches/s58-dwin-split-land.patch). The kernel side is session 58 call
# E's, GPU-tested there with the split forced (236 window tests, memcheck); this form adds the cost rule, the tests that
# force it both ways, and a sanitizer config. Predicted (call E): kb71 auto TF32 ~484 -> ~463 us, fp16 ~345 -> ~331;
# probe-kb71-n2 unchanged (kept whole); probe-kb78-p12 ~4% faster. If green: apply the patch here, commit, then
# bench.run for the record.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
git apply docs/patches/s58-dwin-split-land.patch || exit 1
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { grep -B2 -A5 error /tmp/o/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
{
  echo "== window tests"; python3 -m pytest -q tests/kernels -k "dwin or pick or (kernelbench_problem and auto)" -p no:cacheprovider 2>&1 | tail -2
  for tool in memcheck racecheck; do
    echo "== $tool dwin"; CONVT_SANITIZE_ALGOS=dwin compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py 2>&1 | tail -2
  done
  for sp in default 0; do
    echo "== auto, split $sp"
    if [ $sp = default ]; then e=""; else e="CONVT_DWIN_SPLIT=$sp"; fi
    env $e python3 -m bench.gpu_time --cases kb71,probe-kb71-n2,probe-kb78-p12 --modes fp32,fp16 --algos auto 2>&1 | tail -6
  done
  echo "== part A"; python3 -m pytest -q tests/kernels -k "random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack" -p no:cacheprovider 2>&1 | tail -1
  echo "t $((SECONDS - t0)) s"
} 2>&1 | tee /tmp/o/land.txt
(cd /tmp/o && tar czf $OUT/s59a.tgz .)
echo "all $((SECONDS - t0)) s"
