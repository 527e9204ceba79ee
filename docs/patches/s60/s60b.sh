#!/bin/bash
# session 60 call B: call A's edge kernel with its staging batched (16 loads a thread in flight before the shared-memory
# stores; weights in their global order at an odd pitch). Window tests, dwin sanitizers, GPU time with the rule, split off and split forced, the
# kernels' own times by torch.profiler, then bench.run for the record.
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
  for c in kb71 probe-kb71-n2 probe-32-32-k3-n2; do for m in fp32 fp16; do python3 docs/patches/s60/edge_kernels.py $c $m; done; done
  C=kb71,kb78,probe-kb71-n2,probe-kb78-p12,probe-32-32-k3-n2,probe-16-32-k3x2-n4,probe-32-24-k3x4-n1
  for sp in rule 0 1; do
    echo "== auto, split $sp"
    if [ $sp = rule ]; then e=""; else e="CONVT_DWIN_SPLIT=$sp"; fi
    env $e python3 -m bench.gpu_time --cases $C --modes fp32,fp16 --algos auto 2>&1 | tail -16
  done
  echo "t $((SECONDS - t0)) s"
} 2>&1 | tee /tmp/o/land.txt
timeout $((590 - SECONDS + t0)) python3 -m bench.run --out /tmp/o/bench > /tmp/o/bench-run.txt 2>&1; echo "bench.run rc $?"
(cd /tmp/o && tar czf $OUT/s60b.tgz .)
echo "all $((SECONDS - t0)) s"
