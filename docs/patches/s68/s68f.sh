#!/bin/bash
# session 68 call F: the first rows by TMA (.exp68/tfr.cu: rows 0 .. uh - 1 of a segment as TMA boxes into the
# buffers' space and the ring's two slots, asked for by thread 0 at the block's start, taken into registers after the
# weights' barrier; no per-thread loads) side by side with v65 (.exp68/v65.cu). Timing only.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
timeout 200 python3 docs/patches/s64/trace_ab.py $OUT "v65:@.exp68/v65.cu;tfr:@.exp68/tfr.cu" \
  fsrcnn-56-1-n1,probe-fsrcnn-n4-128,probe-fsrcnn-n2-192,probe-dcgan-64-3-128 fp32 5 10 > $OUT/f-ab.txt 2>&1
echo "ab rc $? $((SECONDS - t0)) s"; grep -E "^\||failed|rror" $OUT/f-ab.txt | head -20
grep -E "^fsrcnn" $OUT/f-ab.txt | cut -c1-300
