#!/usr/bin/env bash
# Two GPUs, one port: on a machine with two GPUs, starts `python3 -m service
# --workers 2`, waits until ready, sends inference requests on fresh
# connections, and writes under $OUT (default /tmp/out) per-worker evidence:
# which worker answered, the device each one reports in /health and /metrics,
# the GPU each worker process holds memory on (nvidia-smi), readiness, and how
# the server stops on SIGTERM. Then runs tests/service/test_workers.py against
# CUDA servers. Usage there, from the repository root: bash deploy/two_gpu_check.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}
PORT=${PORT:-8766}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site; fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} CONVT_BUILD_DIR=${CONVT_BUILD_DIR:-/tmp/convt-build}
export CONVT_REQUIRE_CUDA=${CONVT_REQUIRE_CUDA:-1}
export CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")}

nvidia-smi --query-gpu=index,name,uuid,memory.total --format=csv,noheader | tee "$OUT/gpus.csv"
if [ "$(wc -l < "$OUT/gpus.csv")" -lt 2 ]; then
  echo "two_gpu_check: this machine has fewer than two GPUs" | tee "$OUT/summary.txt"
  exit 1
fi

# The parent builds the kernels (minutes, the first time) before it starts the workers.
python3 -m service --workers 2 --port "$PORT" > "$OUT/server.log" 2>&1 &
pid=$!
: > "$OUT/ready-timeline.txt"
for _ in $(seq 1 900); do
  head=$(curl -s -D - -o /dev/null "http://127.0.0.1:$PORT/v2/health/ready" | tr -d '\r')
  code=$(echo "$head" | awk 'NR==1 {print $2}')
  worker=$(echo "$head" | awk -F': ' 'tolower($1)=="x-convt-worker" {print $2}')
  echo "$(date +%T) ready=${code:-no answer} worker=${worker:-none}" >> "$OUT/ready-timeline.txt"
  [ "$code" = 200 ] && break
  kill -0 "$pid" 2>/dev/null || { echo "two_gpu_check: the server exited"; tail -n 40 "$OUT/server.log"; exit 1; }
  sleep 1
done
tail -n 3 "$OUT/ready-timeline.txt"

python3 - "$PORT" "$OUT" <<'EOF'
import json, sys, urllib.error, urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

port, out = sys.argv[1], Path(sys.argv[2])
url = f"http://127.0.0.1:{port}"


def get(path):  # urllib opens a new connection per request, so the kernel picks a worker each time
    try:
        with urllib.request.urlopen(url + path, timeout=120) as r:
            return r.status, r.headers["x-convt-worker"], r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["x-convt-worker"], exc.read()


def per_worker(path, tries=200):
    seen = {}
    for _ in range(tries):
        status, worker, body = get(path)
        seen.setdefault(worker, (status, body))
        if len(seen) == 2:
            break
    return seen


latent = [((i * 7919) % 200 - 100) / 100 for i in range(8 * 100)]
body = json.dumps({"inputs": [{"name": "latent", "shape": [8, 100, 1, 1], "datatype": "FP32", "data": latent}]}).encode()


def infer(_):
    req = urllib.request.Request(url + "/v2/models/dcgan/infer", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return r.headers["x-convt-worker"], r.status, json.loads(r.read())["outputs"][0]["data"]


with ThreadPoolExecutor(8) as pool:
    answers = list(pool.map(infer, range(128)))
counts, first = {}, {}
for worker, status, data in answers:
    counts[worker] = counts.get(worker, 0) + 1
    first.setdefault(worker, data)
assert all(status == 200 for _, status, _ in answers)
diff = None
if len(first) == 2:  # the same input on both GPUs
    a, b = first["0"], first["1"]
    diff = max(abs(x - y) for x, y in zip(a, b))

health = {}
for worker, (status, raw) in per_worker("/health").items():
    (out / f"health-worker{worker}.json").write_bytes(raw)
    report = json.loads(raw)
    health[worker] = {"status": status, "passed": report["passed"], "device": report["device"],
                      "worker": report["worker"], "kernel_backends": report["kernel"]["backends"],
                      "kernel_from_cache": report["kernel"]["from_cache"], "gpus": report["kernel"]["devices"]}
for worker, (status, raw) in per_worker("/metrics").items():
    (out / f"metrics-worker{worker}.txt").write_bytes(raw)
ready = {w: (s, json.loads(b)) for w, (s, b) in per_worker("/v2/health/ready").items()}
summary = {"requests_by_worker": counts, "max_abs_diff_same_input_worker0_vs_worker1": diff,
           "health": health, "ready_by_worker": ready}
(out / "summary.json").write_text(json.dumps(summary, indent=1))
print(json.dumps(summary, indent=1))
ok = (set(counts) == {"0", "1"} and {h["device"] for h in health.values()} == {"cuda:0", "cuda:1"}
      and all(h["passed"] for h in health.values()) and all(s == 200 for s, _ in ready.values()))
print("two_gpu_check:", "PASS" if ok else "FAIL")
(out / "verdict.txt").write_text("PASS\n" if ok else "FAIL\n")
EOF

# Which GPU each worker process holds memory on, by pid (the pids are in health-worker*.json).
nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader | tee "$OUT/compute-apps.csv"
python3 - "$OUT" <<'EOF' | tee "$OUT/gpus-by-worker.txt"
import csv, json, sys
from pathlib import Path

out = Path(sys.argv[1])
index = {row[2].strip(): row[0].strip() for row in csv.reader(open(out / "gpus.csv"))}
held = {}
for pid, uuid, mem in csv.reader(open(out / "compute-apps.csv")):
    held.setdefault(int(pid), []).append(f"GPU {index.get(uuid.strip(), uuid.strip())} ({mem.strip()})")
for path in sorted(out.glob("health-worker*.json")):
    w = json.loads(path.read_text())
    gpus = held.get(w["worker"]["pid"], [])
    verdict = "ok" if len(gpus) == 1 else "UNEXPECTED: a worker should hold memory on its own GPU only"
    print(f"worker {w['worker']['index']} pid {w['worker']['pid']} serves {w['device']}, holds memory on {gpus}: {verdict}")
EOF
ps -o pid,ppid,rss,cmd --ppid "$pid" > "$OUT/worker-processes.txt"

kill -TERM "$pid"
wait "$pid"
echo "server exit code after SIGTERM: $? (0 expected)" | tee "$OUT/shutdown.txt"
sleep 1
ps -o pid,cmd --ppid "$pid" >> "$OUT/shutdown.txt" 2>&1 || echo "no workers left" >> "$OUT/shutdown.txt"
tail -n 20 "$OUT/server.log" > "$OUT/server-tail.log"

CONVT_TEST_DEVICE=cuda python3 -m pytest -q -p no:cacheprovider tests/service/test_workers.py -rs 2>&1 \
  | tee "$OUT/workers-tests.txt" | tail -n 15
