#!/bin/bash
# session 64 call B: the tree's stack kernel's block ends, block by block (DUMP: three traced launches a variant),
# and more, shorter segments (STACK_FILL: the resident blocks' count times F, so blocks come in more than one wave).
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
V="base:;fill15:-DSTACK_FILL=1.5;fill2:-DSTACK_FILL=2.0;fill3:-DSTACK_FILL=3.0"
DUMP=b-marks.pt python3 docs/patches/s64/trace_ab.py $OUT "$V" fsrcnn-56-1-n1,probe-fsrcnn-n4-128 fp32,fp16 5 8 2>&1 \
  | tee $OUT/b-ab.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv | tee -a $OUT/b-ab.txt
echo "all $((SECONDS - t0)) s"
