#!/bin/bash
# Session 58 call E: a narrow last strip launched alone (docs/patches/s58-dwin-split.patch, CONVT_DWIN_SPLIT=1: when
# the last strip is a quarter of kCols wide or less, the full strips get their own band count, the last strip a second
# launch). Call D: kb71's 16 full strips in one round (2 bands) took 425 us on cp.async, 483 on v52; the whole layer
# as picked 484 / 601. Predicted: kb71 cp.async ~425 + ~30 (the narrow strip over 264 tiles of 16 rows) = ~455 us.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
git apply docs/patches/s58-dwin-split.patch || exit 1
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { grep -B2 -A5 error /tmp/o/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
C="kb71,probe-kb71-n2,probe-kb78-p12"
{
  for tma in 0 1; do for sp in 0 1; do
    echo "== TMA=$tma SPLIT=$sp"
    CONVT_DWIN_SPLIT=$sp CONVT_DWIN_TMA=$tma python3 -m bench.gpu_time --cases $C --modes fp32 --algos dwin 2>&1 | tail -3
  done; done
  echo "== auto, SPLIT=0 / 1 (kb71 fp32, fp16)"
  for sp in 0 1; do CONVT_DWIN_SPLIT=$sp python3 -m bench.gpu_time --cases kb71 --modes fp32,fp16 --algos auto 2>&1 | tail -2; done
  echo "== check SPLIT=1"; CONVT_DWIN_SPLIT=1 python3 docs/patches/s58/s58c_check.py 2>&1 | tail -4
  echo "== memcheck SPLIT=1"; CONVT_DWIN_SPLIT=1 timeout 120 compute-sanitizer --tool=memcheck --error-exitcode=99 python3 docs/patches/s58/s58c_check.py 2>&1 | tail -2
  echo "t $((SECONDS - t0)) s"
} 2>&1 | tee /tmp/o/split.txt
CONVT_DWIN_SPLIT=1 python3 -m pytest -q tests/kernels -k "dwin or pick or (kernelbench_problem and auto)" -p no:cacheprovider 2>&1 | tail -1
(cd /tmp/o && tar czf $OUT/s58e.tgz .)
echo "all $((SECONDS - t0)) s"
