#!/bin/bash
# session 56 call B: the input's tensor map from one helper (tma_map's input_map) for the window, stack and halo
# kernels: their GPU tests and sanitizer runs; kb71's store alignment (probe-kb71-p1) and a mid-size kb71 (n2) under
# CONVT_DWIN_TMA=0/1 with L2 sectors; bench.run on the tree
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { tail -30 /tmp/o/build.txt; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 -m pytest -q tests/kernels -k "dwin or pick or (kernelbench_problem and auto)" -p no:cacheprovider 2>&1 | tail -2 | tee /tmp/o/gpu-tests.txt
python3 -m pytest -q tests/kernels -k "random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack" -p no:cacheprovider 2>&1 | tail -2 | tee -a /tmp/o/gpu-tests.txt
for tool in memcheck racecheck; do
  CONVT_SANITIZE_ALGOS=dwin,stack,wgh32,wgh128,wgh64s compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py > /tmp/o/san-$tool.txt 2>&1
  echo "$tool rc $? $(tail -1 /tmp/o/san-$tool.txt)"
done | tee -a /tmp/o/gpu-tests.txt
echo "tests $((SECONDS - t0)) s"
C="kb71,probe-kb71-p1,probe-kb71-n2"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,smsp__inst_executed.sum
for tma in 0 1; do
  echo "== TMA $tma"
  CONVT_DWIN_TMA=$tma python3 -m bench.gpu_time --cases $C --modes fp32 --algos dwin 2>&1 | tail -3
  for c in probe-kb71-p1 probe-kb71-n2; do
    CONVT_DWIN_TMA=$tma timeout 60 ncu --clock-control none -k regex:convt_dwin_kernel -c 1 --metrics $M \
      python3 -m bench.profile_one $c > /tmp/o/ncu-$c-$tma.txt 2>&1
    echo "-- $c"; grep -E "gpu__time|dram__|lts__|inst_exec" /tmp/o/ncu-$c-$tma.txt || tail -3 /tmp/o/ncu-$c-$tma.txt
  done
done 2>&1 | tee /tmp/o/probes.txt
echo "probes $((SECONDS - t0)) s"
timeout $((585 - SECONDS + t0)) python3 -m bench.run --out /tmp/o/bench > /tmp/o/bench-run.txt 2>&1; echo "bench.run rc $?"
echo "all $((SECONDS - t0)) s"
(cd /tmp/o && tar czf $OUT/s56b.tgz .)
cat /tmp/o/gpu-tests.txt /tmp/o/probes.txt
grep -E "geomean|Geomean|kb71|kb78" /tmp/o/bench-run.txt | tail -12
