#!/bin/bash
# (to rebuild .exp67/: NAME.cu = a7f5b1f's convt_stack.cu with docs/patches/s67/stack-NAME.patch applied; keep.cu with
# docs/patches/s66/stack-keep-offsets-only.patch; qfkeep.cu with both; the tree in a call is the copy it names.)
# .exp67/ is untracked: v64.cu = a7f5b1f's convt_stack.cu; pad.cu = v64 with the col2im's items a product row
# rounded up to whole warps past 32 cell columns (no warp reads two product rows: FSRCNN's 2-way bank conflicts
# on the buffer reads gone, at a third item for warps 0-1); nowts.cu = v64 without the weights' global loads (a
# constant in their place; wrong numbers; a diagnostic of what the weights' gather costs the prologue).
# session 67 call D: the three side by side, no main build.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 docs/patches/s64/trace_ab.py $OUT "v64:@.exp67/v64.cu;pad:@.exp67/pad.cu;nowts:@.exp67/nowts.cu" \
  fsrcnn-56-1-n1,probe-fsrcnn-n4-128,probe-fsrcnn-n2-192,probe-dcgan-64-3-128,dcgan-64-3-n64,probe-128-4-k6s2-g2-n2 \
  fp32,fp16 5 10 > $OUT/d-ab.txt 2>&1
echo "ab rc $? $((SECONDS - t0)) s"; grep -E "^\|" $OUT/d-ab.txt
cd $OUT && tar czf /tmp/s67d.tgz . && rm -rf $OUT/* && mv /tmp/s67d.tgz $OUT/
