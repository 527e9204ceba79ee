#!/bin/bash
# session 64 call H: on v62, ring rows asked for at the weights' barrier rather than after the first rows land:
# the later blocks' second (x4), the first blocks' first (x3), both.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
V="v62:;x4:-DSTACK_X4;x3:-DSTACK_X3;x34:-DSTACK_X4 -DSTACK_X3"
python3 docs/patches/s64/trace_ab.py $OUT "$V" fsrcnn-56-1-n1,probe-fsrcnn-n4-128,probe-fsrcnn-n2-192 fp32 5 10 \
  > $OUT/h-ab.txt 2>&1; tail -5 $OUT/h-ab.txt
echo "all $((SECONDS - t0)) s"
