#!/bin/bash
# session 69 call D (H100, a fresh machine): the service tests against CUDA servers on the tree (v66); call C's
# stopped at collection: fastapi 0.165 needs opentelemetry-api, which .whl/ lacked then.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=$PWD:/tmp/site TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1 PYTHONUNBUFFERED=1
export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
t0=$SECONDS
pack() { cd $OUT && tar czf /tmp/s69d.tgz . && rm -rf $OUT/* && mv /tmp/s69d.tgz $OUT/; }
trap pack EXIT
python3 -c "import fastapi, uvicorn, pydantic_settings; print('fastapi', fastapi.__version__)" || exit 4
python3 -m kernels build > $OUT/d-build.txt 2>&1; echo "build rc $? $((SECONDS - t0)) s"
CONVT_TEST_DEVICE=cuda timeout $((580 - (SECONDS - t0))) python3 -m pytest -q -p no:cacheprovider tests/service -rs \
  > $OUT/d-service-tests.txt 2>&1; echo "service rc $?: $(tail -1 $OUT/d-service-tests.txt) $((SECONDS - t0)) s"
grep -E "^FAILED|^ERROR" $OUT/d-service-tests.txt | head
