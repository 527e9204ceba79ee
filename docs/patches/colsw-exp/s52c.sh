#!/bin/bash
# session 52 call C: v49 (vector weight gather, staged row stores) in the tree: build, colsw and cols tests,
# sanitizer, GPU time beside cuDNN, bench.run
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
echo "build $((SECONDS - t0)) s"
{ python3 -m pytest -q -x tests/kernels -k "colsw or cols_shuffle" -p no:cacheprovider 2>&1 | tail -3
  CONVT_SANITIZE_ALGOS=colsw,cols compute-sanitizer --tool=memcheck --error-exitcode=99 python3 tests/kernels/sanitize_cases.py > /tmp/mc.txt 2>&1; echo "memcheck rc $?"; tail -2 /tmp/mc.txt
  CONVT_SANITIZE_ALGOS=colsw,cols compute-sanitizer --tool=racecheck --error-exitcode=99 python3 tests/kernels/sanitize_cases.py > /tmp/rc.txt 2>&1; echo "racecheck rc $?"; tail -2 /tmp/rc.txt
  python3 -m pytest -q tests/kernels -k "cols and not compute_sanitizer" -p no:cacheprovider 2>&1 | tail -3
} 2>&1 | tee $OUT/gpu-tests.txt
echo "tests done $((SECONDS - t0)) s"
python3 -m bench.gpu_time --cases unet-128-64-n1,unet-512-256-n8 --modes fp32,fp16,bf16 --algos auto,colsw,colsk2 2>&1 | tee $OUT/gpu-time.txt
python3 -m bench.run --out $OUT/bench > $OUT/bench-run.txt 2>&1; echo "bench.run rc $?"
tail -32 $OUT/bench-run.txt
echo "all $((SECONDS - t0)) s"
