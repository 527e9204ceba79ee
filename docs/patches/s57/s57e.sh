#!/bin/bash
# Ran on a tree with docs/patches/s57-dwin-sleep-hint.patch applied (git apply it first to rerun).
# session 57 call E: the window kernel's mbarrier waits with a suspend-time hint (CONVT_DWIN_SLEEP ns; experiment
# tree): fewer try-wait turns issued, more issue slots for the working warps?
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { grep -B2 -A5 error /tmp/o/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
C="kb71,probe-kb71-p1,kb78,probe-kb71-n2,probe-32-32-k3-n2,probe-16-32-k3x2-n4"
for sl in 0 10000000 20000; do
  for tma in 0 1; do
    echo "== SLEEP=$sl TMA=$tma"
    CONVT_DWIN_TMA=$tma CONVT_DWIN_SLEEP=$sl python3 -m bench.gpu_time --cases $C --modes fp32 --algos dwin 2>&1 | tail -6
  done
  echo "t $((SECONDS - t0)) s"
done 2>&1 | tee /tmp/o/sleep.txt
for sl in 0 10000000; do
  echo "== ncu kb71 TMA=0 SLEEP=$sl"
  CONVT_DWIN_TMA=0 CONVT_DWIN_SLEEP=$sl timeout 60 ncu --clock-control none -k regex:convt_dwin_kernel -c 1 \
    --metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum \
    python3 -m bench.profile_one kb71 2>&1 | grep -E "gpu__time|dram__|inst_exec"
done 2>&1 | tee -a /tmp/o/sleep.txt
CONVT_DWIN_SLEEP=10000000 python3 -m pytest -q tests/kernels -k "dwin or pick or (kernelbench_problem and auto)" -p no:cacheprovider 2>&1 | tail -1
for tool in memcheck racecheck; do
  CONVT_DWIN_SLEEP=10000000 CONVT_SANITIZE_ALGOS=dwin timeout 100 compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py > /tmp/o/san-$tool.txt 2>&1
  echo "$tool rc $? $(tail -1 /tmp/o/san-$tool.txt)"
done
(cd /tmp/o && tar czf $OUT/s57e.tgz .)
echo "all $((SECONDS - t0)) s"
