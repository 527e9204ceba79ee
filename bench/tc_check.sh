#!/usr/bin/env bash
# One GPU call while developing the tensor-core path: build for sm_90, every forced
# path against float64 and cuDNN (bench.variants), then the GPU kernel tests.
# Usage there: bash bench/tc_check.sh [variants args...]; results under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")}
start=$(date +%s)
python3 -m kernels build 2>&1 | tail -n 3
echo "build: $(( $(date +%s) - start )) s"
timeout "${CONVT_VARIANTS_TIMEOUT:-300}" python3 -m bench.variants --out "$OUT" "$@" 2>&1 | tee "$OUT/variants.txt" | tail -n 70
echo "variants done: $(( $(date +%s) - start )) s"
if [ -n "${CONVT_TESTS:-}" ]; then
  timeout "${CONVT_TESTS_TIMEOUT:-240}" python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_gpu.py -k "$CONVT_TESTS" 2>&1 \
    | tee "$OUT/gpu-tests.txt" | tail -n 25
fi
echo "total: $(( $(date +%s) - start )) s"
