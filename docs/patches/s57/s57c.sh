#!/bin/bash
# session 57 call C: why owned sectors (patch, OWN=1) stays at 475 us on kb71 where probe-kb71-p1 runs 361 on v52:
# Nsight Compute sections on kb71 (OWN=1, TMA=1) and probe-kb71-p1 (TMA=1)
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
git apply docs/patches/s56-dwin-owned-sectors.patch || exit 1
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { grep -B2 -A5 error /tmp/o/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_write.sum,lts__t_requests_op_write.sum,lts__t_sectors_op_read.sum,smsp__inst_executed.sum,smsp__inst_executed_op_global_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,lts__average_t_sector_hit_rate.pct
for v in "CONVT_DWIN_OWN=1 kb71" "CONVT_DWIN_TMA=1 kb71" "CONVT_DWIN_TMA=1 probe-kb71-p1" "CONVT_DWIN_TMA=0 kb71"; do
  set -- $v
  f=/tmp/o/ncu-$2-${1#CONVT_DWIN_}.txt
  env $1 timeout 120 ncu --clock-control none -k regex:convt_dwin_kernel -c 1 --section WarpStateStats --section SchedulerStats \
    --metrics $M python3 -m bench.profile_one $2 > $f 2>&1
  echo "== $v $((SECONDS - t0)) s"
  grep -E "^\s+(gpu__|dram__|lts__|smsp__inst|sm__|l1tex__|Stall|Warp Cycles|Issued Warp|No Eligible|Active Warps)" $f | sed 's/  */ /g'
done
(cd /tmp/o && tar czf $OUT/s57c.tgz .)
echo "all $((SECONDS - t0)) s"
