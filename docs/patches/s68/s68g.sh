#!/bin/bash
# session 68 call G: the first rows by TMA, two forms, side by side with v65 (.exp68/v65.cu): tfr (call F's: row 0
# into the buffers' space, rows 1 .. into the ring's slots, no later block's early ring row) and tfr2 (where the
# group's channels leave only warpgroup 1's skipped k-step as padding, FSRCNN, rows 0 and 1 as two compact boxes in
# the buffers' space, row 2 in slot 1, and the later blocks' first ring row in slot 0 at their start as in v65).
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
timeout 200 python3 docs/patches/s64/trace_ab.py $OUT "v65:@.exp68/v65.cu;tfr:@.exp68/tfr.cu;tfr2:@.exp68/tfr2.cu" \
  fsrcnn-56-1-n1,probe-fsrcnn-n4-128,probe-fsrcnn-n2-192,probe-dcgan-64-3-128 fp32 5 10 > $OUT/g-ab.txt 2>&1
echo "ab rc $? $((SECONDS - t0)) s"; grep -E "^\||failed|rror" $OUT/g-ab.txt | head -20
grep -E "^fsrcnn" $OUT/g-ab.txt | cut -c1-300
