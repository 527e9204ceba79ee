#!/bin/bash
# session 64 call A: the stack kernel's odd segments bottom-up (STACK_UP) and a per-SM start order (STACK_TK: a
# block's first rows wait for the earlier blocks of its SM to have theirs, at most N ns), beside the tree's form.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
V="base:;up:-DSTACK_UP;tk:-DSTACK_TK=1500;tk3:-DSTACK_TK=3000;uptk:-DSTACK_UP -DSTACK_TK=1500"
python3 docs/patches/s64/trace_ab.py $OUT "$V" fsrcnn-56-1-n1,probe-fsrcnn-n4-128 fp32,fp16 5 8 2>&1 | tee $OUT/a-ab.txt
echo "ab $((SECONDS - t0)) s"
python3 docs/patches/s64/trace_ab.py $OUT "$V" probe-dcgan-64-3-n1,probe-128-4-k6s2-g2-n2,dcgan-64-3-n64 fp32,bf16 4 2 \
  2>&1 | tee $OUT/a-ab-small.txt | tail -8
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv | tee -a $OUT/a-ab.txt
echo "all $((SECONDS - t0)) s"
