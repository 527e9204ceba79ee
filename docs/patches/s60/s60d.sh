#!/bin/bash
# session 60 call D: the edge kernel's second form (a thread 4 rows x COLS x 2 output channels, weights packed once a
# call and read by 8-byte loads, only the halo staged). Window tests, dwin sanitizers, the kernels' own times, GPU time
# with the rule and split off (forced on for three small probes), part A, then bench.run for the record.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { grep -B2 -A5 error /tmp/o/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
{
  echo "== window tests"; python3 -m pytest -q tests/kernels -k "dwin or pick or (kernelbench_problem and auto)" -p no:cacheprovider 2>&1 | grep -E "FAILED|passed|failed|Error" | head -20
  for tool in memcheck racecheck; do
    CONVT_SANITIZE_ALGOS=dwin compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py > /tmp/o/san-$tool.txt 2>&1
    echo "$tool rc $? $(tail -1 /tmp/o/san-$tool.txt)"
  done
  echo "t $((SECONDS - t0)) s"
  for c in kb71 probe-kb71-n2 probe-kb78-p12; do for m in fp32 fp16; do python3 docs/patches/s60/edge_kernels.py $c $m 2>&1 | grep -v "Warn\|warn"; done; done
  for m in fp32 fp16; do CONVT_DWIN_SPLIT=1 python3 docs/patches/s60/edge_kernels.py probe-32-32-k3-n2 $m 2>&1 | grep -v "Warn\|warn"; done
  C=kb71,kb78,probe-kb71-n2,probe-kb78-p12,probe-32-32-k3-n2,probe-16-32-k3x2-n4,probe-32-24-k3x4-n1
  for sp in rule 0; do
    echo "== auto, split $sp"
    if [ $sp = rule ]; then e=""; else e="CONVT_DWIN_SPLIT=$sp"; fi
    env $e python3 -m bench.gpu_time --cases $C --modes fp32,fp16 --algos auto 2>&1 | tail -16
  done
  echo "== auto, split 1"
  CONVT_DWIN_SPLIT=1 python3 -m bench.gpu_time --cases probe-32-32-k3-n2,probe-16-32-k3x2-n4,probe-32-24-k3x4-n1 --modes fp32,fp16 --algos auto 2>&1 | tail -8
  echo "== part A"; python3 -m pytest -q tests/kernels -k "random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack" -p no:cacheprovider 2>&1 | tail -1
  echo "t $((SECONDS - t0)) s"
} 2>&1 | tee /tmp/o/land.txt
timeout $((590 - SECONDS + t0)) python3 -m bench.run --out /tmp/o/bench > /tmp/o/bench-run.txt 2>&1; echo "bench.run rc $?"
(cd /tmp/o && tar czf $OUT/s60d.tgz .)
echo "all $((SECONDS - t0)) s"
