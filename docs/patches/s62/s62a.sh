#!/bin/bash
# session 62 call A: the edge kernel beside the window kernel on a second stream (convt_dwin.cu), built; the window
# tests (the new beside test among them: same bits as one stream, a caller's stream, a CUDA-graph capture); memcheck
# over the window configurations; then beside.py's A/B (GPU time and back-to-back) with a profiled call each.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { grep -B2 -A5 error $OUT/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 -m pytest -q tests/kernels -k "dwin or pick or (kernelbench_problem and auto)" -p no:cacheprovider \
  > $OUT/window.txt 2>&1; grep -E "FAILED|passed|failed|Error" $OUT/window.txt | head -20
echo "t $((SECONDS - t0)) s"
CONVT_SANITIZE_ALGOS=dwin compute-sanitizer --tool=memcheck --error-exitcode=99 python3 tests/kernels/sanitize_cases.py \
  > $OUT/memcheck.txt 2>&1; echo "memcheck rc $?"; tail -3 $OUT/memcheck.txt
echo "t $((SECONDS - t0)) s"
python3 docs/patches/s62/beside.py $OUT kb71,probe-kb78-p12,probe-kb71-n2 fp32,fp16 2>&1 | tee $OUT/beside.txt | grep -v "^  "
grep "^  " $OUT/beside.txt | grep -E "kb71-fp32|kb71-fp16" | head -12
echo "all $((SECONDS - t0)) s"
