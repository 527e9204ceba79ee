#!/bin/bash
# session 68 call D: the TF32 prologue's first microsecond. .exp68/v65m2.cu = v65 with thread 0's prologue marks
# (call C's, and slot 9 after the addresses' arithmetic, before the mbarriers' init and the slots' zeroing);
# .exp68/v65r.cu = that with the ring slots' padding zeroed after the first rows' loads are issued, by a loop without
# a division; .exp68/v65pf.cu = v65r with thread 0 prefetching the tensor map first. The tree = v65pf without marks.
# Then (where v65pf beats v65m2 on FSRCNN) the main build on the tree, part A, decoder and pick, the stack sanitizers
# and bench.run.
export PYTHONPATH=$PWD TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
pack() { cd $OUT && tar czf /tmp/s68d.tgz . && rm -rf $OUT/* && mv /tmp/s68d.tgz $OUT/; }
DUMP=d-dump5.pt timeout 200 python3 docs/patches/s64/trace_ab.py $OUT "v65m2:@.exp68/v65m2.cu;v65r:@.exp68/v65r.cu;v65pf:@.exp68/v65pf.cu" \
  fsrcnn-56-1-n1,probe-fsrcnn-n4-128,probe-fsrcnn-n2-192,probe-dcgan-64-3-128 fp32 5 10 > $OUT/d-ab.txt 2>&1
echo "ab rc $? $((SECONDS - t0)) s"; grep -E "^\||failed|rror" $OUT/d-ab.txt | head -20
so=$(ls /tmp/convt-build/s64-v65m2/*.so | head -1); cuobjdump -sass $so > $OUT/d-v65m2.sass 2>&1; echo "sass $(wc -l < $OUT/d-v65m2.sass) lines"
python3 - $OUT/d-ab.txt <<'PY' || { pack; exit 2; }
import re, sys
row = [l for l in open(sys.argv[1]) if l.startswith("| fsrcnn-56-1-n1 | fp32")][0]
v = [(float(a), float(b)) for a, b in re.findall(r"([0-9.]+) \(([0-9.e+-]+)\)", row)]
print("gate", v)
sys.exit(0 if v[2][0] < v[0][0] and v[2][1] < 1e-3 else 1)
PY
python3 -m kernels build > $OUT/d-build.txt 2>&1; echo "build rc $? $((SECONDS - t0)) s"
timeout 100 pytest -q tests/kernels -k "random_configs or wide_channels or halo_kernel or rows_kernel or patch_kernel or taps_pick or stack" \
  -p no:cacheprovider > $OUT/d-tests-a.txt 2>&1
echo "part A rc $?: $(tail -1 $OUT/d-tests-a.txt) $((SECONDS - t0)) s"; grep -E "^FAILED" $OUT/d-tests-a.txt | head
timeout 45 pytest -q tests/kernels -k "(decoder or pick) and not stack and not compute_sanitizer" -p no:cacheprovider \
  > $OUT/d-tests-dp.txt 2>&1
echo "decoder/pick rc $?: $(tail -1 $OUT/d-tests-dp.txt) $((SECONDS - t0)) s"
for tool in memcheck racecheck; do
  CONVT_SANITIZE_ALGOS=stack timeout 60 compute-sanitizer --tool=$tool --error-exitcode=99 python3 tests/kernels/sanitize_cases.py \
    > $OUT/d-$tool.txt 2>&1; echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/d-$tool.txt | tail -1)"
done
timeout 50 python3 -m bench.run --out $OUT/bench > $OUT/d-bench.txt 2>&1; echo "bench rc $? $((SECONDS - t0)) s"
grep -iE "geomean|geometric" $OUT/d-bench.txt | head -8
echo "all $((SECONDS - t0)) s"
pack
