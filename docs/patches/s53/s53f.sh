#!/bin/bash
# session 53 call F: the window kernel's runs in sets of strips (v50b) beside its bands: build, GPU time beside cuDNN,
# its tests, memcheck and racecheck, bench.run
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
echo "build $((SECONDS - t0)) s"
G="timeout 90 python3 -m bench.gpu_time"
{ $G --cases kb71,kb78 --modes fp32,fp16 --algos auto,dwinb,dwinr,dwnp8
  $G --cases probe-32-32-k3-n2,probe-16-32-k3x2-n4,probe-64-64-k3-g2-n8,probe-32-24-k3x4-n1 --modes fp32 --algos auto,dwinb,dwinr | tail -n +3
} 2>&1 | tee $OUT/gpu-time.txt
echo "times $((SECONDS - t0)) s"
{ timeout 90 python3 -m pytest -q tests/kernels -k "dwin or (kernelbench_problem and auto)" -p no:cacheprovider 2>&1 | tail -3
  for tool in memcheck racecheck; do
    CONVT_SANITIZE_ALGOS=dwin,dwinr timeout 60 compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py > /tmp/s.txt 2>&1; echo "$tool rc $?"; tail -2 /tmp/s.txt
  done
} 2>&1 | tee $OUT/gpu-tests.txt
echo "tests $((SECONDS - t0)) s"
timeout 60 python3 -m bench.run --out $OUT/bench > $OUT/bench-run.txt 2>&1; echo "bench.run rc $?"
grep -E "^kb71|^kb78" $OUT/bench-run.txt | head -8; grep "KernelBench" $OUT/bench-run.txt
echo "all $((SECONDS - t0)) s"
