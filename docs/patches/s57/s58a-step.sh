#!/bin/bash
# For the next session's first call (written in session 57, not run): neighbouring strips in step on the window
# kernel (docs/patches/s57-dwin-step.patch, which includes the trace of s57-dwin-trace.patch). CONVT_DWIN_LAG=L: a
# strip stores output row j only once the strip to its left has stored row j - L, waiting at most CONVT_DWIN_WAIT_NS
# (20000 by default). Predicted (kernel-notes v54, Next): kb71 on v52 from ~605 us toward ~380, with its DRAM reads
# back near the input's 537 MB; one-round layers (p1, kb78) unchanged.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
git apply docs/patches/s57-dwin-step.patch || exit 1
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { grep -B2 -A5 error /tmp/o/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
C="kb71,probe-kb71-p1,probe-kb71-n2,kb78,probe-kb78-p12"
{
  echo "== no pacing"; CONVT_DWIN_TMA=1 python3 -m bench.gpu_time --cases $C --modes fp32 --algos dwin 2>&1 | tail -5
  for lag in 1 4 16; do
    echo "== LAG=$lag"; CONVT_DWIN_LAG=$lag CONVT_DWIN_TMA=1 python3 -m bench.gpu_time --cases $C --modes fp32 --algos dwin 2>&1 | tail -5
  done
  echo "== LAG=4 WAIT_NS=200000"; CONVT_DWIN_LAG=4 CONVT_DWIN_WAIT_NS=200000 CONVT_DWIN_TMA=1 python3 -m bench.gpu_time --cases kb71 --modes fp32 --algos dwin 2>&1 | tail -1
  echo "== cp.async, LAG=4"; CONVT_DWIN_LAG=4 CONVT_DWIN_TMA=0 python3 -m bench.gpu_time --cases kb71 --modes fp32 --algos dwin 2>&1 | tail -1
  echo "== traces, LAG=4"; CONVT_DWIN_LAG=4 python3 docs/patches/s57/s57f.py kb71:1 kb71:0 2>&1 | grep -E "^==|dwin trace" | cut -c1-400
  for lag in none 4; do
    echo "== ncu kb71 TMA=1 LAG=$lag"
    if [ $lag = none ]; then e=""; else e="CONVT_DWIN_LAG=$lag"; fi
    env $e CONVT_DWIN_TMA=1 timeout 60 ncu --clock-control none -k regex:convt_dwin_kernel -c 1 \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum \
      python3 -m bench.profile_one kb71 2>&1 | grep -E "gpu__time|dram__|inst_exec"
  done
  echo "t $((SECONDS - t0)) s"
} 2>&1 | tee /tmp/o/step.txt
CONVT_DWIN_LAG=4 CONVT_DWIN_TMA=1 python3 -m pytest -q tests/kernels -k "dwin" -p no:cacheprovider 2>&1 | tail -1
(cd /tmp/o && tar czf $OUT/s58a.tgz .)
echo "all $((SECONDS - t0)) s"
