"""Load test: throughput and latency of a real server under concurrent clients.

    python -m bench.load [--device cpu|cuda] [--concurrency 1,8,64] [--seconds 4]
                         [--soak 10000] [--out docs/benchmarks/load-cpu]

Starts real servers (``python -m service`` on a free loopback port) and drives
them with an asyncio httpx client:
- batch-1 ``dcgan`` requests over binary and JSON at each concurrency, dynamic
  batching on (the defaults) and off (``--max-batch-size 1``): requests/s,
  p50/p99 latency, errors;
- protocol overhead: a 1 MiB binary input (``kernelbench-71``, [1, 32, 64, 128]
  fp32), end-to-end latency minus the server's forward time (the
  ``x-convt-compute-ms`` header of the same response), at concurrency 1;
- JSON codec throughput in this process (decode a request, encode a response);
- a soak: ``--soak`` requests at concurrency 64, counting every non-200.
Writes load.json and load.md under --out and prints the tables last.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
HEADER = "Inference-Header-Content-Length"


@contextmanager
def server(device: str, *args: str):
    log = Path(tempfile.mkdtemp(prefix="convt-load-")) / "server.log"
    cmd = [sys.executable, "-m", "service", "--host", "127.0.0.1", "--port", "0", "--device", device,
           *args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 600
        url = None
        while url is None:
            m = re.search(r"(?:Uvicorn running|worker \d+ serving) on (http://127\.0\.0\.1:\d+)", log.read_text())
            if m:
                url = m.group(1)
            elif proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start: {log.read_text()[-3000:]}")
            else:
                time.sleep(0.1)
        while httpx.get(url + "/v2/health/ready").status_code != 200:
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def binary_body(x: np.ndarray, name: str = "latent") -> tuple[bytes, dict[str, str]]:
    head = json.dumps({"inputs": [{"name": name, "shape": list(x.shape),
                                   "datatype": "FP32", "parameters": {"binary_data_size": x.nbytes}}],
                       "parameters": {"binary_data_output": True}}).encode()
    return head + x.tobytes(), {HEADER: str(len(head)), "Content-Type": "application/octet-stream"}


def json_body(x: np.ndarray) -> tuple[bytes, dict[str, str]]:
    body = {"inputs": [{"name": "latent", "shape": list(x.shape), "datatype": "FP32", "data": x.ravel().tolist()}]}
    return json.dumps(body).encode(), {"Content-Type": "application/json"}


async def drive(url: str, path: str, bodies, concurrency: int, seconds: float | None, total: int | None) -> dict:
    """Each of `concurrency` clients sends back-to-back requests until the time or count runs out."""
    lat, codes, compute = [], {}, []
    sent = 0
    stop_at = time.perf_counter() + seconds if seconds else None
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

    async def client(c: httpx.AsyncClient, k: int) -> None:
        nonlocal sent
        i = k
        while True:
            if stop_at is not None and time.perf_counter() >= stop_at:
                return
            if total is not None:
                if sent >= total:
                    return
                sent += 1
            body, headers = bodies[i % len(bodies)]
            i += concurrency
            t0 = time.perf_counter()
            try:
                r = await c.post(path, content=body, headers=headers)
                code = r.status_code
                if code == 200:
                    compute.append(float(r.headers.get("x-convt-compute-ms", "nan")))
            except httpx.HTTPError as exc:
                code = type(exc).__name__
            lat.append(time.perf_counter() - t0)
            codes[code] = codes.get(code, 0) + 1

    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as c:
        t0 = time.perf_counter()
        await asyncio.gather(*(client(c, k) for k in range(concurrency)))
        elapsed = time.perf_counter() - t0
    ok = codes.get(200, 0)
    lat_ms = sorted(x * 1e3 for x in lat)
    return {"requests": len(lat), "ok": ok, "codes": {str(k): v for k, v in codes.items()},
            "throughput_rps": ok / elapsed, "p50_ms": lat_ms[len(lat_ms) // 2] if lat_ms else None,
            "p99_ms": lat_ms[min(len(lat_ms) - 1, int(len(lat_ms) * 0.99))] if lat_ms else None,
            "compute_ms_median": statistics.median(compute) if compute else None, "seconds": elapsed}


def codec_throughput(n_values: int = 1 << 20) -> dict:
    """JSON decode (parse + tensor) and encode of one fp32 tensor, MB/s of tensor data."""
    import torch

    from service import codec

    x = np.random.default_rng(0).standard_normal(n_values, dtype=np.float32)
    body, _ = json_body(x.reshape(1, -1))
    t0 = time.perf_counter()
    req = codec.parse_request(body)
    t = codec.decode_input(req.inputs[0], None)
    decode_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    codec.encode_response({"model_name": "m"}, [("out", torch.from_numpy(x), False)])
    encode_s = time.perf_counter() - t0
    mb = x.nbytes / 1e6
    assert t.numel() == n_values
    return {"tensor_MB": mb, "decode_MBps": mb / decode_s, "encode_MBps": mb / encode_s,
            "decode_plus_encode_MBps": mb / (decode_s + encode_s)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--concurrency", default="1,8,64")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--soak", type=int, default=10000)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    levels = [int(c) for c in a.concurrency.split(",")]
    rng = np.random.default_rng(1)
    latents = [rng.standard_normal((1, 100, 1, 1), dtype=np.float32) for _ in range(64)]
    protocols = {"binary": [binary_body(x) for x in latents], "json": [json_body(x) for x in latents]}
    result = {"device": a.device, "command": "python -m bench.load " + " ".join(argv or sys.argv[1:]), "runs": []}
    for batching, args in (("on", ()), ("off", ("--max-batch-size", "1"))):
        with server(a.device, *args) as url:
            for proto, bodies in protocols.items():
                for conc in levels:
                    r = asyncio.run(drive(url, "/v2/models/dcgan/infer", bodies, conc, a.seconds, None))
                    result["runs"].append({"batching": batching, "protocol": proto, "concurrency": conc, **r})
            if batching == "on" and a.soak:
                r = asyncio.run(drive(url, "/v2/models/dcgan/infer", protocols["binary"], 64, None, a.soak))
                result["soak"] = {"concurrency": 64, **r}
    with server(a.device, "--model", "kernelbench-71", "--max-batch-size", "1") as url:
        x = rng.random((1, 32, 64, 128), dtype=np.float32)  # 1 MiB
        r = asyncio.run(drive(url, "/v2/models/kernelbench-71/infer", [binary_body(x, "input")], 1, None, 60))
        r["overhead_ms"] = r["p50_ms"] - r["compute_ms_median"]
        result["overhead_1MiB"] = {"input_bytes": x.nbytes, **r}
    result["json_codec"] = codec_throughput()
    md = render(result)
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "load.json").write_text(json.dumps(result, indent=1))
        (a.out / "load.md").write_text(md)
    print(md)
    return 0


def render(res: dict) -> str:
    lines = [f"Device: {res['device']}. Command: `{res['command']}`", "",
             "| batching | protocol | concurrency | requests/s | p50 ms | p99 ms | forward ms (median) | non-200 |",
             "|---|---|---|---|---|---|---|---|"]
    for r in res["runs"]:
        bad = {k: v for k, v in r["codes"].items() if k != "200"}
        lines.append(f"| {r['batching']} | {r['protocol']} | {r['concurrency']} | {r['throughput_rps']:.0f} | "
                     f"{r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['compute_ms_median'] or float('nan'):.2f} | "
                     f"{bad or 0} |")
    on = {(r["protocol"], r["concurrency"]): r["throughput_rps"] for r in res["runs"] if r["batching"] == "on"}
    off = {(r["protocol"], r["concurrency"]): r["throughput_rps"] for r in res["runs"] if r["batching"] == "off"}
    lines.append("")
    for key in sorted(on):
        if key in off and off[key]:
            lines.append(f"- batching on/off, {key[0]}, concurrency {key[1]}: {on[key] / off[key]:.2f}x")
    if "soak" in res:
        s = res["soak"]
        lines.append(f"- soak: {s['requests']} binary requests at concurrency 64: {s['ok']} ok, codes {s['codes']}, "
                     f"{s['throughput_rps']:.0f} requests/s")
    o = res["overhead_1MiB"]
    lines.append(f"- 1 MiB binary input (kernelbench-71), concurrency 1: end-to-end p50 {o['p50_ms']:.2f} ms, "
                 f"forward {o['compute_ms_median']:.2f} ms, protocol overhead {o['overhead_ms']:.2f} ms")
    j = res["json_codec"]
    lines.append(f"- JSON codec, {j['tensor_MB']:.1f} MB fp32 tensor: decode {j['decode_MBps']:.0f} MB/s, encode "
                 f"{j['encode_MBps']:.0f} MB/s, decode+encode {j['decode_plus_encode_MBps']:.0f} MB/s")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
