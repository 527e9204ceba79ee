#!/bin/bash
# Ran on a tree with docs/patches/s57-dwin-l2-policies.patch applied (git apply it first to rerun).
# session 57 call D: L2 cache policies on v52 (CONVT_DWIN_HINT; experiment tree): does keeping the output's
# partly written sectors in L2 (stores evict_last) or pushing the input out first (TMA loads evict_first) remove
# kb71's extra DRAM reads on the TMA path?
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { grep -B2 -A5 error /tmp/o/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
C="kb71,probe-kb71-p1,probe-kb71-n2,kb78,probe-kb78-p12"
for hnt in 0 1 2 3 4; do
  echo "== HINT=$hnt"
  CONVT_DWIN_TMA=1 CONVT_DWIN_HINT=$hnt python3 -m bench.gpu_time --cases $C --modes fp32 --algos dwin 2>&1 | tail -5
  CONVT_DWIN_TMA=1 CONVT_DWIN_HINT=$hnt timeout 60 ncu --clock-control none -k regex:convt_dwin_kernel -c 1 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    python3 -m bench.profile_one kb71 2>&1 | grep -E "gpu__time|dram__"
  echo "t $((SECONDS - t0)) s"
done 2>&1 | tee /tmp/o/hint.txt
echo "== cp.async reference"
CONVT_DWIN_TMA=0 python3 -m bench.gpu_time --cases kb71 --modes fp32 --algos dwin 2>&1 | tail -1
CONVT_DWIN_HINT=1 CONVT_DWIN_TMA=1 python3 -m pytest -q tests/kernels -k "dwin" -p no:cacheprovider 2>&1 | tail -1
(cd /tmp/o && tar czf $OUT/s57d.tgz .)
echo "all $((SECONDS - t0)) s"
