#!/bin/bash
# session 69 call C (H100, a fresh machine): the tree (v66) built again, the batch-1 decoder layers by four timing
# methods beside cuDNN (docs/patches/s69/batch1_methods.py), bench.run a second time, then the service tests against CUDA servers (wheels
# carried in .whl/: fastapi, starlette, uvicorn, pydantic and their needs).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=$PWD:/tmp/site TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1 PYTHONUNBUFFERED=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
pack() { cd $OUT && tar czf /tmp/s69c.tgz . && rm -rf $OUT/* && mv /tmp/s69c.tgz $OUT/; }
trap pack EXIT
python3 -m kernels build > $OUT/c-build.txt 2>&1; echo "build rc $? $((SECONDS - t0)) s"
timeout 80 python3 docs/patches/s69/batch1_methods.py 3 > $OUT/c-batch1.txt 2>&1; echo "batch1 rc $? $((SECONDS - t0)) s"
grep -E "^\|" $OUT/c-batch1.txt
timeout 60 python3 -m bench.run --out $OUT/bench > $OUT/c-bench.txt 2>&1; echo "bench rc $? $((SECONDS - t0)) s"
grep -iE "geometric.*KernelBench" $OUT/c-bench.txt
CONVT_TEST_DEVICE=cuda timeout $((570 - (SECONDS - t0))) python3 -m pytest -q -p no:cacheprovider tests/service -rs \
  > $OUT/c-service-tests.txt 2>&1; echo "service rc $?: $(tail -1 $OUT/c-service-tests.txt) $((SECONDS - t0)) s"
grep -E "^FAILED|^ERROR" $OUT/c-service-tests.txt | head
