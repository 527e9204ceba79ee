#!/bin/bash
# session 66, right after call A on the same warm machine (call A's bench files did not come back: more files under
# $OUT than the device returns, so everything is packed into one archive here): bench.run again on the tree (v63).
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,temperature.gpu --format=csv > $OUT/smi.txt
python3 -m bench.run --out $OUT/bench > $OUT/bench-run.txt 2>&1; echo "rc $? $((SECONDS-t0)) s"
cd $OUT && tar czf b.tgz bench smi.txt && rm -rf bench smi.txt
