#!/bin/bash
# .exp66/ is untracked: each copy there is the tree's convt_stack.cu with one of this folder's patches applied
# (v63.cu = fb77776's file, v64.cu = 530d3f9's, whose device code is 85b3951's).
# session 66 call B: two stack-kernel variants beside the tree by docs/patches/s64/trace_ab.py (5 inputs in rotation,
# alternating rounds, no main build):
#   wcal: each lane's weight columns by arithmetic from a few uniform parameters, not three indexed reads of
#         g.wcol[i][lane] (call A's profile: ~9% of FSRCNN TF32's stall samples wait on those reads);
#   c2t:  the col2im's output offset kept a segment's base and stepped a cell row (fewer address instructions an item).
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 docs/patches/s64/trace_ab.py $OUT "tree:;wcal:@.exp66/wcal.cu;c2t:@.exp66/c2t.cu" \
  fsrcnn-56-1-n1,probe-fsrcnn-n4-128,probe-fsrcnn-n2-192,probe-dcgan-64-3-128,dcgan-64-3-n64,probe-128-4-k6s2-g2-n2 \
  fp32,fp16 5 10 > $OUT/b-ab.txt 2>&1; echo "rc $?"; grep -E "^\|" $OUT/b-ab.txt; grep -i -E "error|Traceback" $OUT/b-ab.txt | head
echo "all $((SECONDS - t0)) s"
