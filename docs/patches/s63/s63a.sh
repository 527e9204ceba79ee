#!/bin/bash
# (The call ran pack.py, the first form of ab.py with CONVT_STACK_PACK and 0,1,2 built in; the same method and
# output, its traces tagged pack0/pack2.)
# session 63 call A: the stack kernel's weights from a pack kernel's image, with the stack kernel launched as its
# programmatic dependent (convt_stack.cu, CONVT_STACK_PACK 0/1/2), built; the stack tests (the new packed-weights
# test among them: same bits in every mode, a CUDA-graph capture); pack.py's A/B with a profiled call each; then
# memcheck and racecheck over the stack configurations.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { grep -B2 -A5 error $OUT/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 -m pytest -q tests/kernels -k "stack_packed" -p no:cacheprovider > $OUT/packed.txt 2>&1
grep -E "FAILED|passed|failed|Error" $OUT/packed.txt | head -20
echo "t $((SECONDS - t0)) s"
python3 docs/patches/s63/ab.py $OUT CONVT_STACK_PACK 0,1,2 fsrcnn-56-1-n1 fp32,fp16,bf16 2>&1 | tee $OUT/pack.txt | grep -v "^  "
python3 docs/patches/s63/ab.py $OUT CONVT_STACK_PACK 0,1,2 probe-fsrcnn-n4-128,probe-128-4-k6s2-g2-n2 fp32,fp16 2>&1 | tee $OUT/pack2.txt | grep -v "^  "
grep "^  " $OUT/pack.txt | grep fp32 | head -8
echo "t $((SECONDS - t0)) s"
python3 -m pytest -q tests/kernels -k "stack and not compute_sanitizer" -p no:cacheprovider > $OUT/stack.txt 2>&1
grep -E "FAILED|passed|failed|Error" $OUT/stack.txt | head -20
echo "t $((SECONDS - t0)) s"
for tool in memcheck racecheck; do
  CONVT_SANITIZE_ALGOS=stack timeout 100 compute-sanitizer --tool=$tool --error-exitcode=99 python3 \
    tests/kernels/sanitize_cases.py > $OUT/$tool.txt 2>&1; echo "$tool rc $?"; tail -2 $OUT/$tool.txt
done
echo "all $((SECONDS - t0)) s"
