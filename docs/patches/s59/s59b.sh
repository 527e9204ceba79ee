#!/bin/bash
# session 59 call B: the narrow last strip launched alone, as landed (call A ran the s58 land patch: its split_narrow
# returned 1 with parts[0] already cut to the full strips, so a layer the rule kept whole lost its last strip). Window
# tests, sanitizers, GPU time of the pick with the rule and with the split off, part A, then bench.run for the record.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { grep -B2 -A5 error /tmp/o/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
{
  echo "== window tests"; python3 -m pytest -q tests/kernels -k "dwin or pick or (kernelbench_problem and auto)" -p no:cacheprovider 2>&1 | grep -E "FAILED|passed|failed"
  for tool in memcheck racecheck; do
    CONVT_SANITIZE_ALGOS=dwin compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py > /tmp/o/san-$tool.txt 2>&1
    echo "$tool rc $? $(tail -1 /tmp/o/san-$tool.txt)"
  done
  C=kb71,kb78,probe-kb71-n2,probe-kb78-p12,probe-kb71-p1
  for sp in rule 0; do
    echo "== auto, split $sp"
    if [ $sp = rule ]; then e=""; else e="CONVT_DWIN_SPLIT=$sp"; fi
    env $e python3 -m bench.gpu_time --cases $C --modes fp32,fp16 --algos auto 2>&1 | tail -10
  done
  echo "== part A"; python3 -m pytest -q tests/kernels -k "random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack" -p no:cacheprovider 2>&1 | tail -1
  echo "t $((SECONDS - t0)) s"
} 2>&1 | tee /tmp/o/land.txt
timeout $((590 - SECONDS + t0)) python3 -m bench.run --out /tmp/o/bench > /tmp/o/bench-run.txt 2>&1; echo "bench.run rc $?"
(cd /tmp/o && tar czf $OUT/s59b.tgz .)
echo "all $((SECONDS - t0)) s"
