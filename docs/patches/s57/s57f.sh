#!/bin/bash
# session 57 call F: neighbouring strips' skew on kb71 (tree with docs/patches/s57-dwin-trace.patch)
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > /tmp/build.txt 2>&1 || { grep -B2 -A5 error /tmp/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 docs/patches/s57/s57f.py kb71:1 kb71:0 probe-kb71-p1:1 probe-kb71-n2:1 kb78:1 2>&1 | grep -E "^==|dwin trace|Error|error" | cut -c1-400
CONVT_DWIN_TMA=1 python3 -m bench.gpu_time --cases kb71,probe-kb71-p1 --modes fp32 --algos dwin 2>&1 | tail -2
echo "all $((SECONDS - t0)) s"
