#!/bin/bash
# (The call ran pack.py, the first form of ab.py with CONVT_STACK_PACK and 0,1,2 built in; the same method and
# output, its traces tagged pack0/pack2.)
# session 63 call B: call A's pack path with the image read by ld.global.cg after griddepcontrol.wait (call A's __ldg
# gave unwritten or stale weights in a first call and in a graph replay); the stack tests; pack.py's A/B again.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { grep -B2 -A5 error $OUT/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 -m pytest -q tests/kernels -k "stack and not compute_sanitizer" -p no:cacheprovider > $OUT/stack.txt 2>&1
grep -E "^E  .*error|FAILED|passed|failed" $OUT/stack.txt | head -20
echo "t $((SECONDS - t0)) s"
python3 docs/patches/s63/ab.py $OUT CONVT_STACK_PACK 0,1,2 fsrcnn-56-1-n1,probe-128-4-k6s2-g2-n2 fp32,fp16 2>&1 | tee $OUT/pack.txt | grep -v "^  "
grep "^  " $OUT/pack.txt | grep "fsrcnn-56-1-n1-fp32" | head -8
rm -f $OUT/*.json
echo "all $((SECONDS - t0)) s"
