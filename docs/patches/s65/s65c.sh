#!/bin/bash
# session 65 call C: what a cell row's ~0.9 us is made of, by timing-only ablations of the tree's stack kernel (their
# outputs are wrong by design): .exp65/abl_nocol.cu (no col2im in the loop), abl_notake.cu (the ring row waited for
# but not read into registers), abl_nosts.cu (the accumulators not stored to the buffers), abl_nocolsts.cu (both).
# Made from the tree's convt_stack.cu by text replacement (kernel-notes, session 65).
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 docs/patches/s64/trace_ab.py $OUT "tree:;nocol:@.exp65/abl_nocol.cu;notake:@.exp65/abl_notake.cu;\
nosts:@.exp65/abl_nosts.cu;nocolsts:@.exp65/abl_nocolsts.cu" fsrcnn-56-1-n1,probe-fsrcnn-n4-128 fp32,fp16 5 6 \
  > $OUT/c-ab.txt 2>&1; echo "rc $?"; grep -E "^fsrcnn|^\|" $OUT/c-ab.txt | cut -c1-330
echo "all $((SECONDS - t0)) s"
