#!/bin/bash
# session 64 call I: v62, and for the kernels without the ring (the half types) an L2 prefetch of rows STACK_PF..UH
# by the blocks dispatched after the first one an SM, at their start.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
V="v62:;pf3:-DSTACK_PF=3;pf1:-DSTACK_PF=1"
python3 docs/patches/s64/trace_ab.py $OUT "$V" fsrcnn-56-1-n1,probe-fsrcnn-n4-128 fp16,bf16 5 8 \
  > $OUT/i-ab.txt 2>&1; tail -6 $OUT/i-ab.txt
echo "all $((SECONDS - t0)) s"
