#!/bin/bash
# Session 58 call B: s58a's blocking poll cost 2-4 us a row at any lag (kb71 600 -> 900-1090 us, one-round p1 and
# kb78 +950 us over 256-row tiles, where neighbours were already within 2 us). docs/patches/s58-dwin-step-prefetch.patch
# loads the left strip's counter a row early and spins only when that stale value says the left strip is behind,
# counting the rows that spun and gave up (CONVT_DWIN_LAG_REPORT). LAG=1000000 publishes but never waits.
# Predicted: publish-only and LAG 8 within 2% of no pacing on p1 and kb78; kb71 toward ~400 us if the skew is the cause.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
git apply docs/patches/s58-dwin-step-prefetch.patch || exit 1
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { grep -B2 -A5 error /tmp/o/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
C="kb71,probe-kb71-p1,probe-kb71-n2,kb78"
{
  echo "== no pacing"; CONVT_DWIN_TMA=1 python3 -m bench.gpu_time --cases $C --modes fp32 --algos dwin 2>&1 | tail -4
  for lag in 1000000 1 2 4 8; do
    echo "== LAG=$lag"; CONVT_DWIN_LAG=$lag CONVT_DWIN_TMA=1 python3 -m bench.gpu_time --cases $C --modes fp32 --algos dwin 2>&1 | tail -4
  done
  echo "== cp.async none / LAG=2"; CONVT_DWIN_TMA=0 python3 -m bench.gpu_time --cases kb71 --modes fp32 --algos dwin 2>&1 | tail -1
  CONVT_DWIN_LAG=2 CONVT_DWIN_TMA=0 python3 -m bench.gpu_time --cases kb71 --modes fp32 --algos dwin 2>&1 | tail -1
  for lag in 1 4; do for c in kb71 probe-kb71-p1; do
    echo "== report $c LAG=$lag"; CONVT_DWIN_LAG=$lag CONVT_DWIN_LAG_REPORT=1 CONVT_DWIN_TMA=1 python3 -m bench.profile_one $c 2>&1 | grep "dwin lag" | tail -1
  done; done
  echo "== traces, LAG=2"; CONVT_DWIN_LAG=2 python3 docs/patches/s57/s57f.py kb71:1 2>&1 | grep -E "^==|dwin trace" | cut -c1-400
  for lag in none 2 8; do
    echo "== ncu kb71 TMA=1 LAG=$lag"
    if [ $lag = none ]; then e=""; else e="CONVT_DWIN_LAG=$lag"; fi
    env $e CONVT_DWIN_TMA=1 timeout 60 ncu --clock-control none -k regex:convt_dwin_kernel -c 1 \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum \
      python3 -m bench.profile_one kb71 2>&1 | grep -E "gpu__time|dram__|inst_exec"
  done
  echo "t $((SECONDS - t0)) s"
} 2>&1 | tee /tmp/o/step.txt
CONVT_DWIN_LAG=2 CONVT_DWIN_TMA=1 python3 -m pytest -q tests/kernels -k "dwin" -p no:cacheprovider 2>&1 | tail -1
(cd /tmp/o && tar czf $OUT/s58b.tgz .)
echo "all $((SECONDS - t0)) s"
