#!/bin/bash
# session 69 call A (H100): the tree (v66: v65 + the first rows by TMA, session 68's tfr2 with every first row waited
# on before the first take) side by side with v65 (.exp69/v65.cu = 5673ee5's convt_stack.cu); where v66 is not faster
# on FSRCNN TF32 or not correct, v65 goes back in (marker /tmp/s69-v65 for call B). Then the main build, part A,
# decoder and pick, and bench.run, the issue's card's run.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
pack() { cd $OUT && tar czf /tmp/s69a.tgz . && rm -rf $OUT/* && mv /tmp/s69a.tgz $OUT/; }
timeout 170 python3 docs/patches/s64/trace_ab.py $OUT "v65:@.exp69/v65.cu;v66:" \
  fsrcnn-56-1-n1,probe-fsrcnn-n4-128,probe-fsrcnn-n2-192,probe-dcgan-64-3-128 fp32 5 10 > $OUT/a-ab.txt 2>&1
echo "ab rc $? $((SECONDS - t0)) s"; grep -E "^\||failed|rror" $OUT/a-ab.txt | head -20
python3 - $OUT/a-ab.txt <<'PY' || { echo "gate: v65 back in"; cp .exp69/v65.cu kernels/csrc/cuda/convt_stack.cu; touch /tmp/s69-v65; }
import re, sys
row = [l for l in open(sys.argv[1]) if l.startswith("| fsrcnn-56-1-n1 | fp32")][0]
v = [(float(a), float(b)) for a, b in re.findall(r"([0-9.]+) \(([0-9.e+-]+)\)", row)]
print("gate", v)
sys.exit(0 if v[1][0] < v[0][0] and v[1][1] < 1e-3 else 1)
PY
python3 -m kernels build > $OUT/a-build.txt 2>&1; echo "build rc $? $((SECONDS - t0)) s"
timeout 100 pytest -q tests/kernels -k "random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack" \
  -p no:cacheprovider > $OUT/a-tests-a.txt 2>&1
echo "part A rc $?: $(tail -1 $OUT/a-tests-a.txt) $((SECONDS - t0)) s"; grep -E "^FAILED" $OUT/a-tests-a.txt | head
timeout 45 pytest -q tests/kernels -k "(decoder or pick) and not stack and not compute_sanitizer" -p no:cacheprovider \
  > $OUT/a-tests-dp.txt 2>&1
echo "decoder/pick rc $?: $(tail -1 $OUT/a-tests-dp.txt) $((SECONDS - t0)) s"
timeout 90 python3 -m bench.run --out $OUT/bench > $OUT/a-bench.txt 2>&1; echo "bench rc $? $((SECONDS - t0)) s"
grep -iE "geometric" $OUT/a-bench.txt | head -8
echo "all $((SECONDS - t0)) s"
pack
