#!/bin/bash
# Session 58 call C: tiles past the first round claimed in order (docs/patches/s58-dwin-dyn.patch, CONVT_DWIN_DYN=1:
# an atomic counter, the producer claiming a tile ahead through a shared queue), so neighbouring strips start
# together however far the walkers drift. s58b's pacing cut kb71's extra reads (710 -> 604 MB at LAG 2) but its polls
# cost 2-4 us a row. Predicted: kb71 v52 ~600 -> 420-480 us, first-row skew p90 49 -> <10 us; one-round layers unchanged.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
git apply docs/patches/s58-dwin-dyn.patch || exit 1
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { grep -B2 -A5 error /tmp/o/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
C="kb71,probe-kb71-n2,probe-kb78-p12,probe-kb71-p1,kb78"
{
  for tma in 1 0; do
    echo "== TMA=$tma static"; CONVT_DWIN_TMA=$tma python3 -m bench.gpu_time --cases $C --modes fp32 --algos dwin 2>&1 | tail -5
    echo "== TMA=$tma DYN"; CONVT_DWIN_DYN=1 CONVT_DWIN_TMA=$tma python3 -m bench.gpu_time --cases $C --modes fp32 --algos dwin 2>&1 | tail -5
  done
  echo "== fp16 kb71 static / DYN"; python3 -m bench.gpu_time --cases kb71 --modes fp16 --algos dwin 2>&1 | tail -1
  CONVT_DWIN_DYN=1 python3 -m bench.gpu_time --cases kb71 --modes fp16 --algos dwin 2>&1 | tail -1
  echo "== traces DYN"; CONVT_DWIN_DYN=1 python3 docs/patches/s57/s57f.py kb71:1 kb71:0 probe-kb71-n2:1 2>&1 | grep -E "^==|dwin trace" | cut -c1-400
  for e in "" CONVT_DWIN_DYN=1; do
    echo "== ncu kb71 TMA=1 $e"
    env $e CONVT_DWIN_TMA=1 timeout 60 ncu --clock-control none -k regex:convt_dwin_kernel -c 1 \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum \
      python3 -m bench.profile_one kb71 2>&1 | grep -E "gpu__time|dram__|inst_exec"
  done
  echo "== check"; CONVT_DWIN_DYN=1 python3 docs/patches/s58/s58c_check.py 2>&1 | tail -4
  for tool in memcheck racecheck; do
    echo "== $tool DYN"; CONVT_DWIN_DYN=1 timeout 120 compute-sanitizer --tool=$tool --error-exitcode=99 python3 docs/patches/s58/s58c_check.py 2>&1 | tail -2
  done
  echo "t $((SECONDS - t0)) s"
} 2>&1 | tee /tmp/o/dyn.txt
for e in "" CONVT_DWIN_DYN=1; do env $e python3 -m pytest -q tests/kernels -k "dwin or pick or (kernelbench_problem and auto)" -p no:cacheprovider 2>&1 | tail -1; done
(cd /tmp/o && tar czf $OUT/s58c.tgz .)
echo "all $((SECONDS - t0)) s"
