#!/bin/bash
# session 55 call E: v52 as landed (fp32 raw rows by TMA with the direct epilogue at 15 taps or more): build; the
# window kernel's tests, sanitizer runs, GPU time, bench.run, parts A and B of the GPU tests
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { tail -30 /tmp/o/build.txt; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 -m pytest -q tests/kernels -k "dwin or pick or (kernelbench_problem and auto)" -p no:cacheprovider 2>&1 | tail -2 | tee /tmp/o/gpu-tests.txt
for tool in memcheck racecheck; do
  CONVT_SANITIZE_ALGOS=dwin compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py > /tmp/o/san-$tool.txt 2>&1
  echo "$tool rc $? $(tail -1 /tmp/o/san-$tool.txt)"
done | tee -a /tmp/o/gpu-tests.txt
echo "tests $((SECONDS - t0)) s"
python3 -m bench.gpu_time --cases kb71,kb78,probe-32-24-k3x4-n1 --modes fp32,fp16 --algos auto 2>&1 | tee /tmp/o/gpu-time.txt
python3 -m bench.run --out /tmp/o/bench > /tmp/o/bench-run.txt 2>&1; echo "bench.run rc $?"
echo "bench $((SECONDS - t0)) s"
python3 -m pytest -q tests/kernels -k "random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack" -p no:cacheprovider 2>&1 | tail -2 | tee -a /tmp/o/gpu-tests.txt
echo "part A $((SECONDS - t0)) s"
(cd /tmp/o && tar czf $OUT/s55e.tgz .)
timeout $((570 - SECONDS + t0)) python3 -m pytest -q tests/kernels -k "not (random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack) and not compute_sanitizer" -p no:cacheprovider 2>&1 | tail -2 | tee -a /tmp/o/gpu-tests.txt
echo "part B $((SECONDS - t0)) s"
cp /tmp/o/gpu-tests.txt $OUT/gpu-tests-final.txt
grep -E "geomean|Geomean|kb71|kb78" /tmp/o/bench-run.txt | tail -12
