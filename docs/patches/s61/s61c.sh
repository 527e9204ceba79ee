#!/bin/bash
# session 61 call C: on the landed tree (edge kernel form 4): (1) the bench.run-over-GPU-time gap on kb71 TF32 again,
# 2000 calls a phase, sleep-first and back-to-back alternated three times, clock-event reasons sampled; (2) Nsight
# Compute's full set on kb71's edge kernel with per-instruction source counters, for the next form (kernel-notes v58)
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
python3 -m kernels build > $OUT/build.txt 2>&1 || { grep -B2 -A5 error $OUT/build.txt | head -30; exit 1; }
echo "build $((SECONDS - t0)) s"
nvidia-smi -q -d POWER,CLOCK,PERFORMANCE > $OUT/smi-q.txt 2>&1
python3 docs/patches/s61/gap.py kb71 fp32 2000 alternate 2>&1 | grep "^|" | tee $OUT/gap-alt.txt
echo "t $((SECONDS - t0)) s"
ncu --kernel-name regex:convt_edge -c 1 --set full --import-source yes -o $OUT/edge-kb71 \
  python3 docs/patches/s60/edge_kernels.py kb71 fp32 > $OUT/ncu-run.txt 2>&1; echo "ncu rc $?"
ncu -i $OUT/edge-kb71.ncu-rep --page details > $OUT/ncu-edge-details.txt 2>&1
ncu -i $OUT/edge-kb71.ncu-rep --page source --csv --print-source sass > $OUT/ncu-edge-sass.csv 2>&1
echo "sass csv $(wc -l < $OUT/ncu-edge-sass.csv) lines"
grep -E "Duration|Executed Instructions |Issued Warp|Warp Cycles Per Issued|Active Warps Per|SM Active Cycles|Elapsed Cycles" \
  $OUT/ncu-edge-details.txt | head -12
echo "all $((SECONDS - t0)) s"
