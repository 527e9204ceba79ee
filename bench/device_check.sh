#!/usr/bin/env bash
# One call on the GPU machine: build for Hopper (sm_90a), self-check, GPU tests (parity,
# KernelBench, sanitizers), benchmark against cuDNN; logs and results under $OUT.
# Usage there: bash bench/device_check.sh [kernels|bench|variants|gputime|service|health|load|frontends|all]...
# variants (not in all): every forced CUDA path beside cuDNN, `python -m bench.variants
# $CONVT_VARIANTS_ARGS`; gputime (not in all): GPU time alone, `python -m bench.gpu_time $CONVT_GPU_TIME_ARGS`;
# CONVT_K picks GPU tests by -k expression.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -m kernels selftest 2>&1 | tee "$OUT/selftest.txt" | tail -n 25
for part in "${@:-all}"; do
  case $part in
    kernels|all)
      python3 -m pytest -q -p no:cacheprovider tests/kernels -rs -k "${CONVT_K:-}" 2>&1 | tee "$OUT/gpu-tests.txt" | tail -n 30 ;;
  esac
  case $part in
    bench|all)
      python3 -m bench.run --out "$OUT/bench" ${CONVT_BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.txt" | tail -n 80 ;;
  esac
  case $part in
    variants)
      python3 -m bench.variants --out "$OUT" ${CONVT_VARIANTS_ARGS:-} 2>&1 | tee "$OUT/variants.txt" | tail -n 40 ;;
  esac
  case $part in
    gputime)
      python3 -m bench.gpu_time ${CONVT_GPU_TIME_ARGS:-} 2>&1 | tee -a "$OUT/gpu-time.md" | tail -n 40 ;;
  esac
  case $part in
    service|all)
      CONVT_TEST_DEVICE=cuda python3 -m pytest -q -p no:cacheprovider ${CONVT_SERVICE_TESTS:-tests/service} -rs 2>&1 | tee "$OUT/service-tests.txt" | tail -n 30 ;;
  esac
  case $part in
    health|all)  # a /health response from a real CUDA server
      python3 -m service --device cuda --port 8765 > "$OUT/server-cuda.log" 2>&1 &
      pid=$!
      for _ in $(seq 1 180); do
        curl -sf http://127.0.0.1:8765/v2/health/ready >/dev/null && break
        sleep 1
      done
      curl -s -w '\nHTTP %{http_code}\n' http://127.0.0.1:8765/health > "$OUT/health-cuda.json"
      tail -n 3 "$OUT/health-cuda.json"
      kill -TERM $pid; wait $pid ;;
  esac
  case $part in
    load|all)  # throughput and latency of a CUDA server (bench/load.py; about 2 min after the build): $OUT/load/load.{md,json}
      # CONVT_LOAD_ARGS: more bench.load flags (word-split); CONVT_LOAD_TAG: a suffix for the out folder
      python3 -m bench.load --device cuda --client-procs ${CONVT_CLIENT_PROCS:-4} --out "$OUT/load${CONVT_LOAD_TAG:-}" ${CONVT_LOAD_ARGS:-} 2>&1 | tail -n 30 ;;
  esac
  case $part in
    frontends)  # batching on/off at concurrency 64 for each --frontends in CONVT_FRONTENDS: $OUT/load-fe<N>/
      for fe in ${CONVT_FRONTENDS:-1 2 4 8}; do
        python3 -m bench.load --device cuda --client-procs ${CONVT_CLIENT_PROCS:-4} --parts batching --concurrency 64 \
          --soak 0 --server-args "--frontends $fe" --out "$OUT/load-fe$fe" 2>&1 | tail -n 8
      done ;;
  esac
done
