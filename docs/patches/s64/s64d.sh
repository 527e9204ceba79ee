#!/bin/bash
# session 64 call D: the stack kernel's segments balanced between the first and later blocks of an SM (STACK_BAL: the
# first-dispatched segments take 1 more cell row), and the first ring row asked for at the start (STACK_R1: 1 every
# block, 2 the later blocks of an SM).
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
V="base:;bal:-DSTACK_BAL=1;r1a:-DSTACK_R1=1;r1w:-DSTACK_R1=2;balr1w:-DSTACK_BAL=1 -DSTACK_R1=2"
DUMP=d-marks.pt python3 docs/patches/s64/trace_ab.py $OUT "$V" fsrcnn-56-1-n1,probe-fsrcnn-n4-128 fp32,fp16 5 8 2>&1 \
  | tee $OUT/d-ab.txt
python3 docs/patches/s64/trace_ab.py $OUT "$V" probe-dcgan-64-3-n1,probe-128-4-k6s2-g2-n2,dcgan-64-3-n64 fp32,bf16 4 2 \
  2>&1 | tee $OUT/d-ab-small.txt | tail -8
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv | tee -a $OUT/d-ab.txt
echo "all $((SECONDS - t0)) s"
