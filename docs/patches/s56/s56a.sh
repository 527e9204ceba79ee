#!/bin/bash
# session 56 call A: v52 against the paired-store patch (docs/patches/s55-dwin-direct-pairs.patch), TMA and cp.async:
# GPU time on kb71, kb78 and the probes; Nsight Compute's memory tables on kb71 for each variant; dwin tests on the patch
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { tail -30 /tmp/o/build.txt; exit 1; }
echo "build $((SECONDS - t0)) s"
C="kb71,kb78,probe-32-32-k3-n2,probe-16-32-k3x2-n4,probe-64-64-k3-g2-n8,probe-32-24-k3x4-n1"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_read_lookup_miss.sum,lts__t_sectors_op_write_lookup_miss.sum,smsp__inst_executed.sum
M0=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,smsp__inst_executed.sum
variants() {
  for tma in 1 0; do
    echo "== $1 TMA $tma"
    CONVT_DWIN_TMA=$tma python3 -m bench.gpu_time --cases $C --modes fp32 --algos dwin 2>&1 | tail -6
    CONVT_DWIN_TMA=$tma timeout 60 ncu --clock-control none -k regex:convt_dwin_kernel -c 1 --metrics $M \
      python3 -m bench.profile_one kb71 > /tmp/o/ncu-$1-$tma.txt 2>&1
    grep -q "gpu__time" /tmp/o/ncu-$1-$tma.txt || { tail -3 /tmp/o/ncu-$1-$tma.txt; CONVT_DWIN_TMA=$tma timeout 60 ncu \
      --clock-control none -k regex:convt_dwin_kernel -c 1 --metrics $M0 python3 -m bench.profile_one kb71 \
      > /tmp/o/ncu-$1-$tma.txt 2>&1; }
    grep -E "gpu__time|dram__|lts__|inst_exec" /tmp/o/ncu-$1-$tma.txt
    echo "t $((SECONDS - t0)) s"
  done
}
variants v52 2>&1 | tee /tmp/o/variants.txt
git apply docs/patches/s55-dwin-direct-pairs.patch && echo patched
python3 -m kernels build > /tmp/o/build2.txt 2>&1 || { tail -30 /tmp/o/build2.txt; exit 1; }
echo "rebuild $((SECONDS - t0)) s"
variants pairs 2>&1 | tee -a /tmp/o/variants.txt
timeout 120 python3 -m pytest -q tests/kernels -k "dwin" -p no:cacheprovider 2>&1 | tail -3
echo "all $((SECONDS - t0)) s"
tar czf $OUT/s56a.tgz -C /tmp/o .
cat /tmp/o/variants.txt | grep -v "^t "
