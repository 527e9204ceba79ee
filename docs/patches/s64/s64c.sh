#!/bin/bash
# session 64 call C: the tree's stack kernel, block by block (three traced launches a case, kept in c-marks.pt).
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
DUMP=c-marks.pt python3 docs/patches/s64/trace_ab.py $OUT "base:" fsrcnn-56-1-n1,probe-fsrcnn-n4-128 fp32,fp16 5 2 2>&1 \
  | tee $OUT/c-ab.txt
