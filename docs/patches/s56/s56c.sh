#!/bin/bash
# session 56 call C: the window kernel's new pick between v52 and cp.async (rows on 32-byte sectors or an output under
# L2's size): its tests and sanitizer runs; GPU time of the pick beside both paths forced; bench.run
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { grep -B2 -A5 error /tmp/o/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 -m pytest -q tests/kernels -k "dwin or pick or (kernelbench_problem and auto)" -p no:cacheprovider 2>&1 | tail -2 | tee /tmp/o/gpu-tests.txt
for tool in memcheck racecheck; do
  CONVT_SANITIZE_ALGOS=dwin compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py > /tmp/o/san-$tool.txt 2>&1
  echo "$tool rc $? $(tail -1 /tmp/o/san-$tool.txt)"
done | tee -a /tmp/o/gpu-tests.txt
echo "tests $((SECONDS - t0)) s"
C="kb71,kb78,probe-kb71-p1,probe-kb71-n2,probe-kb78-p12,probe-32-32-k3-n2,probe-16-32-k3x2-n4,probe-64-64-k3-g2-n8,probe-32-24-k3x4-n1"
for tma in pick 0 1; do
  echo "== TMA $tma"
  if [ $tma = pick ]; then python3 -m bench.gpu_time --cases $C --modes fp32 --algos auto,dwin 2>&1 | tail -9
  else CONVT_DWIN_TMA=$tma python3 -m bench.gpu_time --cases $C --modes fp32 --algos dwin 2>&1 | tail -9; fi
  echo "t $((SECONDS - t0)) s"
done 2>&1 | tee /tmp/o/pick.txt
timeout $((590 - SECONDS + t0)) python3 -m bench.run --out /tmp/o/bench > /tmp/o/bench-run.txt 2>&1; echo "bench.run rc $?"
echo "all $((SECONDS - t0)) s"
(cd /tmp/o && tar czf $OUT/s56c.tgz .)
cat /tmp/o/gpu-tests.txt /tmp/o/pick.txt
grep -E "geomean|Geomean" /tmp/o/bench-run.txt | tail -12
