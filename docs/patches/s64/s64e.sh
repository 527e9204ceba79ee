#!/bin/bash
# session 64 call E: ring rows asked for at the start of a block, by dispatch order (STACK_RW rows for the blocks
# dispatched after the first one an SM, STACK_RF for the first ones), beside the tree's form.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
V="base:;rw1:-DSTACK_RW=1 -DSTACK_RF=0;rw2:-DSTACK_RW=2 -DSTACK_RF=0;rw2f1:-DSTACK_RW=2 -DSTACK_RF=1"
DUMP=e-marks.pt python3 docs/patches/s64/trace_ab.py $OUT "$V" fsrcnn-56-1-n1,probe-fsrcnn-n4-128 fp32,fp16 5 10 2>&1 \
  | tee $OUT/e-ab.txt | tail -7
python3 docs/patches/s64/trace_ab.py $OUT "$V" probe-fsrcnn-n2-192,probe-dcgan-64-3-128 fp32 5 8 2>&1 \
  | tee $OUT/e-ab-more.txt | tail -4
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv | tee -a $OUT/e-ab.txt
echo "all $((SECONDS - t0)) s"
