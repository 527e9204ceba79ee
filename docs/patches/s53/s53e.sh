#!/bin/bash
# session 53 call E: the window kernel's runs (v50): build, GPU time beside cuDNN, its tests, memcheck, bench.run,
# racecheck
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
echo "build $((SECONDS - t0)) s"
G="python3 -m bench.gpu_time"
{ $G --cases kb71,kb78 --modes fp32,fp16 --algos auto,dwin,dwnp8
  $G --cases probe-32-32-k3-n2,probe-16-32-k3x2-n4,probe-64-64-k3-g2-n8,probe-32-24-k3x4-n1 --modes fp32 --algos auto,dwin,dwnp8 | tail -n +3
} 2>&1 | tee $OUT/gpu-time.txt
echo "times $((SECONDS - t0)) s"
{ python3 -m pytest -q tests/kernels -k "dwin or (kernelbench_problem and auto)" -p no:cacheprovider 2>&1 | tail -3
  CONVT_SANITIZE_ALGOS=dwin timeout 120 compute-sanitizer --tool=memcheck --error-exitcode=99 python3 tests/kernels/sanitize_cases.py > /tmp/mc.txt 2>&1; echo "memcheck rc $?"; tail -2 /tmp/mc.txt
} 2>&1 | tee $OUT/gpu-tests.txt
echo "tests $((SECONDS - t0)) s"
python3 -m bench.run --out $OUT/bench > $OUT/bench-run.txt 2>&1; echo "bench.run rc $?"
grep -E "kb71|kb78" $OUT/bench-run.txt | head -8; grep "KernelBench" $OUT/bench-run.txt
echo "bench $((SECONDS - t0)) s"
CONVT_SANITIZE_ALGOS=dwin timeout 120 compute-sanitizer --tool=racecheck --error-exitcode=99 python3 tests/kernels/sanitize_cases.py > /tmp/rc.txt 2>&1; echo "racecheck rc $?" | tee -a $OUT/gpu-tests.txt; tail -2 /tmp/rc.txt | tee -a $OUT/gpu-tests.txt
echo "all $((SECONDS - t0)) s"
