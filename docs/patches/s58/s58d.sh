#!/bin/bash
# Session 58 call D: is kb71's v52 deficit its rounds? kb71's rows are 1026 wide, so 17 strips (the last 2 columns
# wide) and the cost model picks 11 bands of 47 rows: 1496 tiles, 5.7 rounds, whose strips drift apart (s57 trace).
# One-round layers stay in step: probe-kb78-p12 (rows off sectors too, one round) runs v52 at 650 us against cp.async's
# 740. docs/patches/s58-dwin-bands-strips.patch forces the band count (CONVT_DWIN_BANDS) and a strip range
# (CONVT_DWIN_STRIPS=a:b; the rest left unwritten, so the error column is meaningless on those rows: timing only).
# Predicted: kb71 16 strips x 2 bands (256 tiles, one round) on v52 ~400-440 us against 483-495 for the whole layer
# on cp.async; its narrow 17th strip alone (8 tiles of 516 rows) under ~300 us, so both together fit one round.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
mkdir -p /tmp/o
git apply docs/patches/s58-dwin-bands-strips.patch || exit 1
python3 -m kernels build > /tmp/o/build.txt 2>&1 || { grep -B2 -A5 error /tmp/o/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
g() { env "$@" python3 -m bench.gpu_time --cases kb71 --modes fp32 --algos dwin 2>&1 | tail -1; }
{
  for tma in 1 0; do
    echo "== kb71 TMA=$tma: as picked | 16 strips x 2 bands"
    g CONVT_DWIN_TMA=$tma; g CONVT_DWIN_TMA=$tma CONVT_DWIN_BANDS=2 CONVT_DWIN_STRIPS=0:16
  done
  echo "== TMA=1: 17 x 2 bands (272 tiles) | 16 x 11 bands | strip 16 alone x 1 band | x 4 bands | 16 x 3 bands"
  g CONVT_DWIN_TMA=1 CONVT_DWIN_BANDS=2
  g CONVT_DWIN_TMA=1 CONVT_DWIN_BANDS=11 CONVT_DWIN_STRIPS=0:16
  g CONVT_DWIN_TMA=1 CONVT_DWIN_BANDS=1 CONVT_DWIN_STRIPS=16:17
  g CONVT_DWIN_TMA=1 CONVT_DWIN_BANDS=4 CONVT_DWIN_STRIPS=16:17
  g CONVT_DWIN_TMA=1 CONVT_DWIN_BANDS=3 CONVT_DWIN_STRIPS=0:16
  echo "== p1, p12 as picked, TMA=1"
  CONVT_DWIN_TMA=1 python3 -m bench.gpu_time --cases probe-kb71-p1,probe-kb78-p12 --modes fp32 --algos dwin 2>&1 | tail -2
  for e in "CONVT_DWIN_BANDS=11" "CONVT_DWIN_BANDS=2 CONVT_DWIN_STRIPS=0:16"; do
    echo "== ncu kb71 TMA=1 $e"
    env $e CONVT_DWIN_TMA=1 timeout 60 ncu --clock-control none -k regex:convt_dwin_kernel -c 1 \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_write.sum \
      python3 -m bench.profile_one kb71 2>&1 | grep -E "gpu__time|dram__|lts__"
  done
  echo "t $((SECONDS - t0)) s"
} 2>&1 | tee /tmp/o/bands.txt
(cd /tmp/o && tar czf $OUT/s58d.tgz .)
echo "all $((SECONDS - t0)) s"
