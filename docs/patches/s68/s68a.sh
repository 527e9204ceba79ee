#!/bin/bash
# session 68 call A: the stack kernel's per-cell-row block barrier moved, side by side with v65.
# (.exp68/v65.cu = 5673ee5's convt_stack.cu; the tree = b1: the barrier right after a cell row's wgmma are issued, so
# a warpgroup that stored its products first starts its next chain; .exp68/b2.cu: the barrier after the ring row's
# take; .exp68/b3.cu: b1 with the col2im of the previous row issued before the first commit group's wait.)
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
python3 docs/patches/s64/trace_ab.py $OUT "v65:@.exp68/v65.cu;b1:;b2:@.exp68/b2.cu;b3:@.exp68/b3.cu" \
  fsrcnn-56-1-n1,probe-fsrcnn-n4-128,probe-fsrcnn-n2-192,probe-dcgan-64-3-128,dcgan-64-3-n64,probe-128-4-k6s2-g2-n2 \
  fp32,fp16 5 10 > $OUT/a-ab.txt 2>&1
echo "ab rc $? $((SECONDS - t0)) s"; grep -E "^\||failed|Error" $OUT/a-ab.txt | head -40
cd $OUT && tar czf /tmp/s68a.tgz . && rm -rf $OUT/* && mv /tmp/s68a.tgz $OUT/
