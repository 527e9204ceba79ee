#!/usr/bin/env bash
# The load test of two versions of service/ in one call on the GPU machine, interleaved, so that a
# change is measured against its base on the same host (hosts differ by a third in CPU speed).
# Here: git archive <base-rev> service > .whl/base-service.tar   (.whl travels with `carry`)
# There: [CONVT_CLIENT_PROCS=N] [CONVT_LOAD_ARGS=...] bash bench/load_ab.sh [rounds]   -> $OUT/ab/{before,after}-<round>/load.{md,json}, a summary last.
# Everything but service/ (kernels, models, the load generator) is this tree's in both.
set -uo pipefail
OUT=${OUT:-/tmp/out}
ROUNDS=${1:-2}
ARGS=${CONVT_LOAD_ARGS:---parts batching,overhead,codec --concurrency 64 --soak 0}
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0 CONVT_BUILD_DIR=/tmp/convt-build CONVT_REQUIRE_CUDA=1
export CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")}
mkdir -p "$OUT/ab"
BASE=/tmp/convt-base
rm -rf "$BASE" && mkdir -p "$BASE" && cp -r . "$BASE" && rm -rf "$BASE/service" && tar -xf .whl/base-service.tar -C "$BASE"
PYTHONPATH="$PWD:${PYTHONPATH:-}" python3 -m kernels build | tail -n 3  # one build: both trees' kernels/ are this one
for r in $(seq 1 "$ROUNDS"); do
  for side in after before; do
    dir=$PWD; [ "$side" = before ] && dir=$BASE
    (cd "$dir" && PYTHONPATH="$dir:${PYTHONPATH:-}" python3 -m bench.load --device cuda --client-procs ${CONVT_CLIENT_PROCS:-4} \
      --out "$OUT/ab/$side-$r" $ARGS > "$OUT/ab/$side-$r.log" 2>&1)
    echo "== $side, round $r"; grep -E "^\| (on|off) |decode\+encode|blocking|busy fraction" "$OUT/ab/$side-$r/load.md"
  done
done
