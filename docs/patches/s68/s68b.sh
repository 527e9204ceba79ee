#!/bin/bash
# session 68 call B: the stack kernel's rolling form (TF32 ring: an input row multiplied once by all height offsets'
# weights, N = 32 uh; the tree) side by side with v65 (.exp68/v65.cu = 5673ee5's convt_stack.cu) and with every
# block asking for its first ring row at its start (.exp68/rolle.cu); then the main build on the tree, part A of the
# GPU suite, the decoder and pick tests, the stack sanitizers, and bench.run.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
timeout 200 python3 docs/patches/s64/trace_ab.py $OUT "v65:@.exp68/v65.cu;roll:;rolle:@.exp68/rolle.cu" \
  fsrcnn-56-1-n1,probe-fsrcnn-n4-128,probe-fsrcnn-n2-192,probe-dcgan-64-3-128 fp32 5 10 > $OUT/b-ab.txt 2>&1
echo "ab rc $? $((SECONDS - t0)) s"; grep -E "^\||failed|rror" $OUT/b-ab.txt | head -30
# go on only where a rolling variant beats v65 on FSRCNN TF32 with a TF32-sized error
python3 - $OUT/b-ab.txt <<'PY' || { cd $OUT && tar czf /tmp/s68b.tgz . && rm -rf $OUT/* && mv /tmp/s68b.tgz $OUT/; exit 2; }
import re, sys
row = [l for l in open(sys.argv[1]) if l.startswith("| fsrcnn-56-1-n1 | fp32")][0]
v = [(float(a), float(b)) for a, b in re.findall(r"([0-9.]+) \(([0-9.e+-]+)\)", row)]
print("gate", v)
sys.exit(0 if min(t for t, e in v[1:] if e < 1e-3) < v[0][0] else 1)
PY
python3 -m kernels build > $OUT/b-build.txt 2>&1; echo "build rc $?" >> $OUT/b-build.txt
tail -1 $OUT/b-build.txt; echo "build done $((SECONDS - t0)) s"
grep -q "build rc 0" $OUT/b-build.txt || { grep -B2 -A5 error $OUT/b-build.txt | head -30; cd $OUT && tar czf /tmp/s68b.tgz . && rm -rf $OUT/* && mv /tmp/s68b.tgz $OUT/; exit 1; }
timeout 110 pytest -q tests/kernels -k "random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack" \
  -p no:cacheprovider > $OUT/b-tests-a.txt 2>&1
echo "part A rc $?: $(tail -1 $OUT/b-tests-a.txt) $((SECONDS - t0)) s"; grep -E "^FAILED" $OUT/b-tests-a.txt | head
timeout 50 pytest -q tests/kernels -k "(decoder or pick) and not stack and not compute_sanitizer" -p no:cacheprovider \
  > $OUT/b-tests-dp.txt 2>&1
echo "decoder/pick rc $?: $(tail -1 $OUT/b-tests-dp.txt) $((SECONDS - t0)) s"
for tool in memcheck racecheck; do
  CONVT_SANITIZE_ALGOS=stack timeout 50 compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py \
    > $OUT/b-$tool.txt 2>&1; echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/b-$tool.txt | tail -1)"
done
timeout 60 python3 -m bench.run --out $OUT/bench > $OUT/b-bench.txt 2>&1; echo "bench rc $? $((SECONDS - t0)) s"
grep -iE "geomean|geometric" $OUT/b-bench.txt | head -8
echo "all $((SECONDS - t0)) s"
cd $OUT && tar czf /tmp/s68b.tgz . && rm -rf $OUT/* && mv /tmp/s68b.tgz $OUT/
