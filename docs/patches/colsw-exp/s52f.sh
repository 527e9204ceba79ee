#!/bin/bash
# session 52 call F: Nsight Compute of v49 on unet-128-64-n1 (fp16 and TF32 sections; fp16 stall samples by region)
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > /tmp/build.txt 2>&1 || { tail -30 /tmp/build.txt; exit 1; }
echo "build $((SECONDS - t0)) s"
CONVT_PROFILE_DTYPE=fp16 NCU_TAG=-fp16-colsw-v49-s52 bash bench/profile.sh unet-128-64-n1
CONVT_PROFILE_DTYPE=fp32 NCU_TAG=-fp32-colsw-v49-s52 bash bench/profile.sh unet-128-64-n1
CONVT_PROFILE_DTYPE=fp16 ncu --clock-control none --kernel-name regex:convt -c 1 --section SourceCounters --section WarpStateStats \
  -o /tmp/rep python3 -m bench.profile_one unet-128-64-n1 > /tmp/ncu-src.log 2>&1
ncu -i /tmp/rep.ncu-rep --page source --csv --print-source sass > /tmp/src.csv 2>/dev/null
python3 -m bench.ncu_regions /tmp/src.csv > $OUT/regions-fp16.txt 2>&1; tail -40 $OUT/regions-fp16.txt
echo "all $((SECONDS - t0)) s"
