#!/bin/bash
# session 65 call B: the stack kernel with four warpgroups a block splitting every row's channels four ways (one block
# an SM, segments twice as long, each SM's first rows and weights asked for once), beside the tree, by
# docs/patches/s64/trace_ab.py (only the trace module is built). .exp65/ (untracked, travels with the tree):
# convt_stack_w2.cu is the tree's file with the warpgroup count a macro (2; must time as the tree), convt_stack_w4.cu
# the same at 4, convt_stack_w4i2.cu that with two col2im items a thread (capacity 1024 outputs a cell row, not 1536).
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 docs/patches/s64/trace_ab.py $OUT "tree:;w2:@.exp65/convt_stack_w2.cu;w4:@.exp65/convt_stack_w4.cu;\
w4i2:@.exp65/convt_stack_w4i2.cu" fsrcnn-56-1-n1,probe-fsrcnn-n4-128,probe-fsrcnn-n2-192,probe-dcgan-64-3-128,\
dcgan-64-3-n64 fp32,fp16 5 10 > $OUT/b-ab.txt 2>&1; echo "rc $?"; tail -n 40 $OUT/b-ab.txt
echo "all $((SECONDS - t0)) s"
