#!/bin/bash
# session 63 call F: v61 against the tree's former order (CONVT_STACK_WFIRST=0, docs/patches/s63/stack-wfirst-off-env.patch
# applied) with 5 inputs in rotation, past L2 as bench.gpu_time's 4 are; no traces (the call ran on ~300 s of budget).
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { grep -B2 -A5 error $OUT/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 docs/patches/s63/ab.py $OUT CONVT_STACK_WFIRST 0,1 fsrcnn-56-1-n1,probe-fsrcnn-n4-128 fp32 5 notrace 2>&1 \
  | tee $OUT/wfirst-cold.txt | tail -4
echo "all $((SECONDS - t0)) s"
