#!/bin/bash
# session 55 call D: the window kernel's fp32 raw rows by TMA with L2 promotion none / 64 / 256 bytes, x the epilogue
# direct or by pairs; cp.async beside; GPU time and kb71's DRAM bytes
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > /tmp/build.txt 2>&1 || { tail -30 /tmp/build.txt; exit 1; }
echo "build $((SECONDS - t0)) s"
C="kb71,kb78,probe-32-32-k3-n2,probe-16-32-k3x2-n4,probe-64-64-k3-g2-n8,probe-32-24-k3x4-n1"
for v in "1 0 1" "1 0 0" "1 64 1" "1 64 0" "0 0 0" "0 0 1"; do set -- $v
  echo "== TMA $1 promo $2 direct $3"
  CONVT_DWIN_TMA=$1 CONVT_DWIN_PROMO=$2 CONVT_DWIN_DIRECT=$3 python3 -m bench.gpu_time --cases $C --modes fp32 --algos dwin 2>&1 | tail -6 | cut -d'|' -f2,4,5
  CONVT_DWIN_TMA=$1 CONVT_DWIN_PROMO=$2 CONVT_DWIN_DIRECT=$3 ncu --clock-control none -k regex:convt_dwin_kernel -c 1 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    python3 -m bench.profile_one kb71 2>&1 | grep -E "gpu__time|dram__"
done
echo "== fp16 (cp.async; direct is fp32 only)"
python3 -m bench.gpu_time --cases kb71,kb78 --modes fp16 --algos dwin 2>&1 | tail -2 | cut -d'|' -f2,4,5
echo "all $((SECONDS - t0)) s"
