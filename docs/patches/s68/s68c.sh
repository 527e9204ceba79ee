#!/bin/bash
# session 68 call C: where the stack kernel's TF32 prologue goes. .exp68/v65m.cu = v65 with four more marks in thread
# 0's prologue (slot 10: before the first rows' loads; 11: after they are issued; 12: once the weights' loads have
# arrived; 13: once the first rows have, after the weights' barrier), .exp68/v65mn.cu the same without the weights'
# loads (wrong numbers, timing only). FSRCNN TF32 with 5 inputs in rotation (past L2) and with 1 (L2-resident); every
# traced launch's marks dumped. Then the main build on the tree (v65's kernel) and the stack tests, which gained ring
# cases of one- and two-cell-row segments and one of two height offsets.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
DUMP=c-dump5.pt timeout 200 python3 docs/patches/s64/trace_ab.py $OUT "v65m:@.exp68/v65m.cu;v65mn:@.exp68/v65mn.cu" \
  fsrcnn-56-1-n1,probe-fsrcnn-n4-128 fp32 5 6 > $OUT/c-ab5.txt 2>&1
echo "ab5 rc $? $((SECONDS - t0)) s"; grep -E "^\||failed|rror" $OUT/c-ab5.txt | head
DUMP=c-dump1.pt timeout 120 python3 docs/patches/s64/trace_ab.py $OUT "v65m:@.exp68/v65m.cu;v65mn:@.exp68/v65mn.cu" \
  fsrcnn-56-1-n1 fp32 1 6 > $OUT/c-ab1.txt 2>&1
echo "ab1 rc $? $((SECONDS - t0)) s"; grep -E "^\||failed|rror" $OUT/c-ab1.txt | head
python3 -m kernels build > $OUT/c-build.txt 2>&1; echo "build rc $? $((SECONDS - t0)) s"
timeout 100 pytest -q tests/kernels -k "stack" -p no:cacheprovider > $OUT/c-tests-stack.txt 2>&1
echo "stack tests rc $?: $(tail -1 $OUT/c-tests-stack.txt) $((SECONDS - t0)) s"; grep -E "^FAILED" $OUT/c-tests-stack.txt | head
cd $OUT && tar czf /tmp/s68c.tgz . && rm -rf $OUT/* && mv /tmp/s68c.tgz $OUT/
