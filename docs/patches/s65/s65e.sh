#!/bin/bash
# session 65 call E: which half of the col2im costs the cell row ~0.3 us (call C's nocol): timing-only ablations of the
# tree's stack kernel, .exp65/abl_nost.cu (the sums read and added, never stored) and abl_nold.cu (stores of a
# constant, no buffer reads); beside the tree and call C's nocol, by docs/patches/s64/trace_ab.py.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 docs/patches/s64/trace_ab.py $OUT "tree:;nocol:@.exp65/abl_nocol.cu;nost:@.exp65/abl_nost.cu;\
nold:@.exp65/abl_nold.cu" fsrcnn-56-1-n1,probe-fsrcnn-n4-128 fp32,fp16 5 6 > $OUT/e-ab.txt 2>&1; echo "rc $?"
grep -E "^fsrcnn|^\|" $OUT/e-ab.txt | cut -c1-330
echo "all $((SECONDS - t0)) s"
