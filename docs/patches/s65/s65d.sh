#!/bin/bash
# session 65 call D: the col2im of cell row c - 1 issued before the first products' wait (under the cell row's wgmma)
# rather than after the ring row's take: .exp65/c2f.cu for every type, .exp65/c2ftma.cu for the TF32 ring kernels
# only; beside the tree, by docs/patches/s64/trace_ab.py.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 docs/patches/s64/trace_ab.py $OUT "tree:;c2f:@.exp65/c2f.cu;c2ftma:@.exp65/c2ftma.cu" \
  fsrcnn-56-1-n1,probe-fsrcnn-n4-128,probe-fsrcnn-n2-192,probe-dcgan-64-3-128,dcgan-64-3-n64 fp32,fp16 5 10 \
  > $OUT/d-ab.txt 2>&1; echo "rc $?"; grep -E "^fsrcnn|^\|" $OUT/d-ab.txt | cut -c1-330
echo "all $((SECONDS - t0)) s"
