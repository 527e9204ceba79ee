#!/usr/bin/env bash
# One GPU call while developing the wgmma path: build for sm_90a, forced-path
# correctness first (short time limits: a pipeline bug hangs rather than fails),
# then every path beside cuDNN. Usage there: bash bench/wg_smoke.sh [variants args...]
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1 MAX_JOBS=16
export CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")}
start=$(date +%s)
python3 -m kernels build 2>&1 | tail -n 3
echo "build: $(( $(date +%s) - start )) s"
timeout 60 python3 -m pytest -q -x -p no:cacheprovider tests/kernels/test_gpu.py -k "random_configs and wg64- and float16" 2>&1 | tail -n 15
echo "smoke: $(( $(date +%s) - start )) s"
timeout "${CONVT_TESTS_TIMEOUT:-200}" python3 -m pytest -q -p no:cacheprovider tests/kernels/test_gpu.py -k "${CONVT_TESTS:-wg}" 2>&1 \
  | tee "$OUT/gpu-tests.txt" | grep -v "^\.\|PASSED" | tail -n 40
echo "tests: $(( $(date +%s) - start )) s"
timeout "${CONVT_VARIANTS_TIMEOUT:-200}" python3 -m bench.variants --out "$OUT" "$@" 2>&1 | tee "$OUT/variants.txt" | tail -n 40
echo "total: $(( $(date +%s) - start )) s"
