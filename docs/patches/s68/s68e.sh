#!/bin/bash
# session 68 call E: the tree (v66: the ring slots' padding channels not zeroed where they are exactly warpgroup 1's
# last k-step, which it skips; FSRCNN's 56 channels) against v65 (.exp68/v65.cu = 5673ee5's convt_stack.cu), no
# marks; then (where the tree beats v65 on FSRCNN) the main build, part A, decoder and pick, the stack sanitizers and
# bench.run.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
pack() { cd $OUT && tar czf /tmp/s68e.tgz . && rm -rf $OUT/* && mv /tmp/s68e.tgz $OUT/; }
timeout 150 python3 docs/patches/s64/trace_ab.py $OUT "v65:@.exp68/v65.cu;skip:" \
  fsrcnn-56-1-n1,probe-fsrcnn-n4-128,probe-fsrcnn-n2-192,probe-dcgan-64-3-128 fp32 5 10 > $OUT/e-ab.txt 2>&1
echo "ab rc $? $((SECONDS - t0)) s"; grep -E "^\||failed|rror" $OUT/e-ab.txt | head -20
python3 - $OUT/e-ab.txt <<'PY' || { pack; exit 2; }
import re, sys
row = [l for l in open(sys.argv[1]) if l.startswith("| fsrcnn-56-1-n1 | fp32")][0]
v = [(float(a), float(b)) for a, b in re.findall(r"([0-9.]+) \(([0-9.e+-]+)\)", row)]
print("gate", v)
sys.exit(0 if v[1][0] < v[0][0] and v[1][1] < 1e-3 else 1)
PY
python3 -m kernels build > $OUT/e-build.txt 2>&1; echo "build rc $? $((SECONDS - t0)) s"
timeout 100 pytest -q tests/kernels -k "random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack" \
  -p no:cacheprovider > $OUT/e-tests-a.txt 2>&1
echo "part A rc $?: $(tail -1 $OUT/e-tests-a.txt) $((SECONDS - t0)) s"; grep -E "^FAILED" $OUT/e-tests-a.txt | head
timeout 45 pytest -q tests/kernels -k "(decoder or pick) and not stack and not compute_sanitizer" -p no:cacheprovider \
  > $OUT/e-tests-dp.txt 2>&1
echo "decoder/pick rc $?: $(tail -1 $OUT/e-tests-dp.txt) $((SECONDS - t0)) s"
for tool in memcheck racecheck; do
  CONVT_SANITIZE_ALGOS=stack timeout 60 compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py \
    > $OUT/e-$tool.txt 2>&1; echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/e-$tool.txt | tail -1)"
done
timeout 50 python3 -m bench.run --out $OUT/bench > $OUT/e-bench.txt 2>&1; echo "bench rc $? $((SECONDS - t0)) s"
grep -iE "geomean|geometric" $OUT/e-bench.txt | head -8
echo "all $((SECONDS - t0)) s"
pack
