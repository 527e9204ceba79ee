#!/bin/bash
# session 65 call F: the col2im's sums as two partial sums (one a warpgroup's buffer over its width offsets), then
# their sum and the bias: a chain of 4 dependent adds, not 6 (.exp65/sum2.cu; 104 registers in the TF32 ring kernel
# against 111); beside the tree, by docs/patches/s64/trace_ab.py.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 docs/patches/s64/trace_ab.py $OUT "tree:;sum2:@.exp65/sum2.cu" \
  fsrcnn-56-1-n1,probe-fsrcnn-n4-128,probe-fsrcnn-n2-192,probe-dcgan-64-3-128,dcgan-64-3-n64 fp32,fp16 5 10 \
  > $OUT/f-ab.txt 2>&1; echo "rc $?"; grep -E "^fsrcnn|^\|" $OUT/f-ab.txt | cut -c1-330
echo "all $((SECONDS - t0)) s"
