#!/bin/bash
# session 69 call E (H100): which paths the served dcgan's layers take by batch, and whether a batch changes image
# 0's bits (docs/patches/s69/dcgan_paths.py); then the batching and front-end service tests against CUDA servers with
# the batched answers compared within TF32's precision on CUDA (call D's two failures were bitwise comparisons).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=$PWD:/tmp/site TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1 PYTHONUNBUFFERED=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
pack() { cd $OUT && tar czf /tmp/s69e.tgz . && rm -rf $OUT/* && mv /tmp/s69e.tgz $OUT/; }
trap pack EXIT
python3 -m kernels build > $OUT/e-build.txt 2>&1; echo "build rc $? $((SECONDS - t0)) s"
timeout 60 python3 docs/patches/s69/dcgan_paths.py > $OUT/e-dcgan-paths.txt 2>&1; echo "paths rc $?"; cat $OUT/e-dcgan-paths.txt | tail -12
CONVT_TEST_DEVICE=cuda timeout $((560 - (SECONDS - t0))) python3 -m pytest -q -p no:cacheprovider tests/service/test_batching.py \
  tests/service/test_frontends.py -rs > $OUT/e-service-tests.txt 2>&1; echo "service rc $?: $(tail -1 $OUT/e-service-tests.txt) $((SECONDS - t0)) s"
grep -E "^FAILED|^ERROR|^E  " $OUT/e-service-tests.txt | head
