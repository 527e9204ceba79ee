#!/bin/bash
# session 57 call A: owned-sectors experiment (patch, OWN=1) + part A on adb25b7's input_map (untested on GPU)
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
git apply docs/patches/s56-dwin-owned-sectors.patch || exit 1
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { grep -B2 -A5 error /tmp/o/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
python3 -m pytest -q tests/kernels -k "random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack" -p no:cacheprovider 2>&1 | tail -2
echo "part A $((SECONDS - t0)) s"
CONVT_DWIN_OWN=1 python3 -m pytest -q tests/kernels -k "dwin or (kernelbench_problem and auto)" -p no:cacheprovider 2>&1 | tail -2
echo "own tests $((SECONDS - t0)) s"
C="kb71,probe-kb71-n2,probe-kb78-p12,probe-32-32-k3-n2,probe-16-32-k3x2-n4,probe-32-24-k3x4-n1"
for v in "CONVT_DWIN_TMA=0" "CONVT_DWIN_TMA=1" "CONVT_DWIN_OWN=1"; do
  echo "== $v"
  env $v python3 -m bench.gpu_time --cases $C --modes fp32 --algos dwin 2>&1 | tail -8
  env $v timeout 60 ncu --clock-control none -k regex:convt_dwin_kernel -c 1 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_write.sum \
    python3 -m bench.profile_one kb71 2>&1 | grep -E "gpu__time|dram__|lts__"
  echo "t $((SECONDS - t0)) s"
done 2>&1 | tee /tmp/o/own.txt
(cd /tmp/o && tar czf $OUT/s57a.tgz .)
echo "all $((SECONDS - t0)) s"
