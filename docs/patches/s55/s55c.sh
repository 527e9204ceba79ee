#!/bin/bash
# session 55 call C: the window kernel's fp32 variants, raw rows by TMA or cp.async x the epilogue direct (4-byte
# stores as the accumulators lie) or by pairs (store_rows_sw): GPU time, and DRAM bytes by Nsight Compute on kb71
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { tail -30 /tmp/o/build.txt; exit 1; }
echo "build $((SECONDS - t0)) s"
C="kb71,kb78,probe-32-32-k3-n2,probe-16-32-k3x2-n4,probe-64-64-k3-g2-n8,probe-32-24-k3x4-n1"
for tma in 1 0; do for dir in 1 0; do
  echo "== TMA $tma direct $dir"
  CONVT_DWIN_TMA=$tma CONVT_DWIN_DIRECT=$dir python3 -m bench.gpu_time --cases $C --modes fp32 --algos dwin 2>&1 | tail -6
  CONVT_DWIN_TMA=$tma CONVT_DWIN_DIRECT=$dir ncu --clock-control none -k regex:convt_dwin_kernel -c 1 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,smsp__inst_executed.sum \
    python3 -m bench.profile_one kb71 2>&1 | grep -E "gpu__time|dram__|lts__|inst_exec"
done; done 2>&1 | tee /tmp/o/variants.txt
python3 -m pytest -q tests/kernels -k "dwin" -p no:cacheprovider 2>&1 | tail -2
echo "all $((SECONDS - t0)) s"
