"""Load test: throughput and latency of a real server under concurrent clients.

    python -m bench.load [--device cpu|cuda] [--concurrency 1,8,64] [--seconds 4]
                         [--soak 10000] [--client-procs N] [--out docs/benchmarks/load-cpu]
                         [--model dcgan|bench.tiny_model:factory] [--parts batching,overhead,codec]

Starts real servers (``python -m service`` on a free loopback port) and drives
them with bare HTTP/1.1 keep-alive clients (asyncio streams, requests encoded
once), spread over ``--client-procs`` processes so the client is not what
saturates:
- batch-1 ``dcgan`` (or ``--model``) requests over binary and JSON at each concurrency, dynamic
  batching on (the defaults) and off (``--max-batch-size 1``): requests/s,
  p50/p99 latency, errors, and the mean rows per forward from /metrics;
- protocol overhead: a 1 MiB binary input (``kernelbench-71``, [1, 32, 64, 128]
  fp32), per response its end-to-end latency minus the server's forward time
  (its ``x-convt-compute-ms`` header), median, at concurrency 1, and the
  server's own time per stage (its ``Server-Timing`` header);
- JSON codec throughput in this process (decode a request, encode a response);
- a soak: ``--soak`` requests at concurrency 64, counting every non-200.
Writes load.json and load.md under --out and prints the tables last."""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import re
import shlex
import socket
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
        text = log.read_text()
        m = re.search(r"HTTP parser (\S+), event loop (\S+)", text)  # what the server itself runs
        name = re.search(r"convt.runtime INFO serving (\S+) on ", text).group(1)
        yield url, (m.groups() if m else ("unknown", "unknown")), name, proc.pid
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


def http_request(url: str, path: str, body: bytes, headers: dict[str, str]) -> bytes:
    """One HTTP/1.1 request, bytes ready to write: the clients spend no time per request building it."""
    host = url.split("//", 1)[1]
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}", f"Content-Length: {len(body)}",
             *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _record_timing(head: bytes, elapsed_ms: float, out: dict) -> None:
    """A 200 response's forward time (x-convt-compute-ms), overhead and Server-Timing stages into ``out``."""
    m = re.search(rb"\r\nx-convt-compute-ms: *([0-9.]+)", head)
    compute = float(m.group(1)) if m else float("nan")
    out["compute"].append(compute)
    out["overhead"].append(elapsed_ms - compute)
    m = re.search(rb"\r\nserver-timing: *([^\r]*)", head)
    if m:
        out["stages"].append({k.decode(): float(v) for k, v in re.findall(rb"(\w+);dur=([0-9.]+)", m.group(1))})


def _summary(latency_ms: list[float], compute: list[float], overhead: list[float], stages: list[dict]) -> dict:
    lat = sorted(latency_ms)
    return {"p50_ms": lat[len(lat) // 2] if lat else None,
            "p99_ms": lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else None,
            "compute_ms_median": statistics.median(compute) if compute else None,
            "overhead_ms_median": statistics.median(overhead) if overhead else None,
            # the server's own time per stage (its Server-Timing header), median of each
            "stages_ms_median": {k: statistics.median(st[k] for st in stages) for k in stages[0]} if stages else None}


async def _connection(host: str, port: int, requests: list[bytes], k: int, step: int, stop_at: float | None,
                      budget: list[int], out: dict) -> None:
    """Back-to-back requests on one keep-alive connection until the time or the shared budget runs out.

    A bare HTTP/1.1 client on asyncio streams: httpx costs about a millisecond of client CPU per
    request and its pool slows down with many connections, which made the client, not the server,
    what saturated at concurrency 64."""
    reader = writer = None
    while True:
        if stop_at is not None and time.monotonic() >= stop_at:
            break
        if budget[0] <= 0:
            break
        budget[0] -= 1
        raw = requests[k % len(requests)]
        k += step
        t0 = time.perf_counter()
        try:
            if writer is None:
                reader, writer = await asyncio.open_connection(host, port)
            writer.write(raw)
            head = (await reader.readuntil(b"\r\n\r\n")).lower()
            code = int(head[9:12])
            n = int(re.search(rb"\r\ncontent-length: *(\d+)", head).group(1))
            await reader.readexactly(n)
            if code == 200:
                _record_timing(head, (time.perf_counter() - t0) * 1e3, out)
            if b"\r\nconnection: close" in head:
                writer.close()
                reader = writer = None
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, AttributeError) as exc:
            code = type(exc).__name__
            if writer is not None:
                writer.close()
            reader = writer = None
        out["latency"].append(time.perf_counter() - t0)
        out["codes"][code] = out["codes"].get(code, 0) + 1
    if writer is not None:
        writer.close()


def _client_process(url: str, requests: list[bytes], first: int, step: int, connections: int, start_at: float,
                    seconds: float | None, total: int | None) -> dict:
    """One client process: ``connections`` connections, from ``start_at`` (time.monotonic, shared by all
    processes on the machine) for ``seconds`` or until ``total`` requests are sent."""
    host, port = url.split("//", 1)[1].rsplit(":", 1)
    out = {"latency": [], "codes": {}, "compute": [], "overhead": [], "stages": []}

    async def run() -> None:
        await asyncio.sleep(max(0.0, start_at - time.monotonic()))
        out["cpu0"] = time.process_time()
        stop_at = start_at + seconds if seconds else None
        budget = [total if total is not None else 1 << 62]
        await asyncio.gather(*(_connection(host, int(port), requests, first + i * step, connections * step,
                                           stop_at, budget, out) for i in range(connections)))

    asyncio.run(run())
    out["ended"] = time.monotonic()
    out["cpu"] = time.process_time() - out.pop("cpu0")  # this client's own work: is it what bounds the run?
    return out


def blocking_requests(url: str, raw: bytes, n: int) -> dict:
    """``n`` sequential requests on one keep-alive connection from a blocking socket that reads each
    response into one reused buffer: a client whose own cost is near what a compiled one's is. The
    asyncio client above copies a large response several times (its stream buffer, readexactly's
    slice), which an overhead figure for the server's protocol should not carry."""
    host, port = url.split("//", 1)[1].rsplit(":", 1)
    buf = bytearray(4 << 20)
    out = {"latency": [], "compute": [], "overhead": [], "stages": []}
    with socket.create_connection((host, int(port))) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(n):
            t0 = time.perf_counter()
            sock.sendall(raw)
            got, end = 0, -1
            while end < 0:
                k = sock.recv_into(memoryview(buf)[got:])
                if not k:
                    raise ConnectionError("the server closed the connection")
                got += k
                end = buf.find(b"\r\n\r\n", 0, got)
            head = bytes(buf[:end + 4]).lower()
            total = end + 4 + int(re.search(rb"\r\ncontent-length: *(\d+)", head).group(1))
            if total > len(buf):
                buf.extend(bytes(total - len(buf)))
            while got < total:
                k = sock.recv_into(memoryview(buf)[got:total])
                if not k:
                    raise ConnectionError("the server closed the connection")
                got += k
            elapsed = time.perf_counter() - t0
            if int(head[9:12]) != 200:
                raise RuntimeError(f"status {head[9:12].decode()}: {bytes(buf[end + 4:total])[:300]!r}")
            out["latency"].append(elapsed * 1e3)
            _record_timing(head, elapsed * 1e3, out)
    return {"requests": n, "ok": n, **_summary(out["latency"], out["compute"], out["overhead"], out["stages"])}


def _process_tree(pid: int) -> list[int]:
    """``pid`` and its live descendants (a server's workers, front ends and device process)."""
    tree, i = [pid], 0
    while i < len(tree):
        for children in Path(f"/proc/{tree[i]}/task").glob("*/children"):
            try:
                tree += [int(c) for c in children.read_text().split()]
            except OSError:  # the task ended while being read
                pass
        i += 1
    return tree


def cpu_by_process(pid: int | None) -> dict[int, float]:
    """User + system CPU seconds so far of each process of a server (all threads), by pid, in start
    order: the parent, then with --workers or --frontends multiprocessing's resource tracker and the
    spawned processes (the device process before the front ends)."""
    return {p: c for p in (_process_tree(pid) if pid is not None else ()) if (c := _cpu(f"/proc/{p}/stat")) is not None}


def loop_cpu_by_process(pid: int | None) -> dict[int, float]:
    """The same for each process's main thread alone, which runs its event loop: a process's total also
    counts its other threads (the device thread, whose CUDA synchronize spins while the GPU works)."""
    return {p: c for p in (_process_tree(pid) if pid is not None else ())
            if (c := _cpu(f"/proc/{p}/task/{p}/stat")) is not None}


def _cpu(stat: str) -> float | None:
    try:
        fields = Path(stat).read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def metrics_totals(url: str, model: str) -> dict[str, float]:
    text = httpx.get(url + "/metrics", timeout=60).text
    values = {}
    for key, series in (("batches", "convt_batch_size_count"), ("rows", "convt_batch_size_sum")):
        m = re.search(re.escape(f'{series}{{model="{model}"}}') + r" (\S+)", text)
        values[key] = float(m.group(1)) if m else 0.0
    return values


def drive(url: str, model: str, requests: list[bytes], concurrency: int, seconds: float | None, total: int | None,
          procs: int, pid: int | None = None) -> dict:
    """``concurrency`` connections spread over ``procs`` client processes, each sending back-to-back requests;
    ``pid``: the server's process, whose CPU time per request is reported."""
    procs = max(1, min(procs, concurrency))
    shares = [concurrency // procs + (i < concurrency % procs) for i in range(procs)]
    totals = [None if total is None else -(-total * s // concurrency) for s in shares]
    before, cpu0, loop0 = metrics_totals(url, model), cpu_by_process(pid), loop_cpu_by_process(pid)
    start_at = time.monotonic() + (0.5 if procs > 1 else 0.0)  # time for the processes to start
    if procs == 1:
        parts = [_client_process(url, requests, 0, 1, concurrency, start_at, seconds, total)]
    else:
        ctx = multiprocessing.get_context("spawn")  # the parent may hold CUDA or OpenMP state that fork would copy
        with ctx.Pool(procs) as pool:
            parts = pool.starmap(_client_process, [(url, requests, i, procs, shares[i], start_at, seconds, totals[i])
                                                   for i in range(procs)])
    cpu1, loop1 = cpu_by_process(pid), loop_cpu_by_process(pid)
    loops = [loop1[p] - loop0[p] for p in sorted(loop1) if p in loop0]
    by_process = {p: cpu1[p] - cpu0[p] for p in sorted(cpu1) if p in cpu0}
    cpu = sum(by_process.values()) if pid is not None else float("nan")
    after = metrics_totals(url, model)
    elapsed = max(p["ended"] for p in parts) - start_at
    lat = [x * 1e3 for p in parts for x in p["latency"]]
    compute = [c for p in parts for c in p["compute"]]
    codes: dict[str, int] = {}
    for p in parts:
        for k, v in p["codes"].items():
            codes[str(k)] = codes.get(str(k), 0) + v
    ok = codes.get("200", 0)
    stages = [st for p in parts for st in p["stages"]]
    batches = after["batches"] - before["batches"]
    return {"requests": len(lat), "ok": ok, "codes": codes, "throughput_rps": ok / elapsed,
            **_summary(lat, compute, [o for p in parts for o in p["overhead"]], stages),
            "mean_batch": (after["rows"] - before["rows"]) / batches if batches else None,
            "server_cpu_ms_per_request": cpu * 1e3 / ok if ok else None,
            # per server process (pid order) and per client process: which one ran out of CPU first
            "server_cpu_ms_per_request_by_process": [round(c * 1e3 / ok, 4) for c in by_process.values()] if ok else None,
            "server_cpu_busy_by_process": [round(c / elapsed, 3) for c in by_process.values()],
            "server_loop_busy_by_process": [round(c / elapsed, 3) for c in loops],
            "client_cpu_busy": [round(p["cpu"] / elapsed, 3) for p in parts],
            "seconds": elapsed, "client_procs": procs}


def codec_throughput(n_values: int = 1 << 20, repeats: int = 3) -> dict:
    """JSON decode (parse + tensor) and encode of one fp32 tensor, MB/s of tensor data (best of ``repeats``)."""
    import torch

    from service import codec

    x = np.random.default_rng(0).standard_normal(n_values, dtype=np.float32)
    body, _ = json_body(x.reshape(1, -1))
    y = torch.from_numpy(x)
    decode_s = encode_s = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        t = codec.decode_input(codec.parse_request(body).inputs[0], None)
        decode_s = min(decode_s, time.perf_counter() - t0)
        t0 = time.perf_counter()
        codec.encode_response({"model_name": "m"}, [("out", y, False)])
        encode_s = min(encode_s, time.perf_counter() - t0)
    assert torch.equal(t.reshape(-1), y)
    mb = x.nbytes / 1e6
    return {"tensor_MB": mb, "json_MB": len(body) / 1e6, "decode_MBps": mb / decode_s, "encode_MBps": mb / encode_s,
            "decode_plus_encode_MBps": mb / (decode_s + encode_s)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--concurrency", default="1,8,64")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--soak", type=int, default=10000)
    ap.add_argument("--client-procs", type=int, default=max(1, min(4, (os.cpu_count() or 1) // 4)),
                    help="client processes (default: a quarter of the CPUs, at most 4)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--model", default="dcgan", help="served for the batching runs: dcgan, or "
                    "bench.tiny_model:factory (dcgan's shapes, a near-free forward: the server's own cost)")
    ap.add_argument("--server-args", default="", help="more flags for every server started, e.g. --no-access-log")
    ap.add_argument("--parts", default="batching,overhead,codec",
                    help="what to run, comma-separated: batching (and the soak), overhead (1 MiB), codec (JSON)")
    a = ap.parse_args(argv)
    levels = [int(c) for c in a.concurrency.split(",")]
    rng = np.random.default_rng(1)
    latents = [rng.standard_normal((1, 100, 1, 1), dtype=np.float32) for _ in range(64)]
    result = {"device": a.device, "model": a.model, "cpus": os.cpu_count(), "client_procs": a.client_procs,
              "http": None, "loop": None,
              "command": "python -m bench.load " + " ".join(sys.argv[1:] if argv is None else argv), "runs": []}
    parts = set(a.parts.split(","))
    extra = shlex.split(a.server_args)
    for batching, args in (("on", ()), ("off", ("--max-batch-size", "1"))) if "batching" in parts else ():
        with server(a.device, "--model", a.model, *extra, *args) as (url, stack, model, pid):
            result["http"], result["loop"] = stack
            path = f"/v2/models/{model}/infer"
            protocols = {"binary": [http_request(url, path, *binary_body(x)) for x in latents],
                         "json": [http_request(url, path, *json_body(x)) for x in latents]}
            for proto, reqs in protocols.items():
                drive(url, model, reqs, 4, None, 32, 1)  # warm-up: first calls and connections stay out
                for conc in levels:
                    r = drive(url, model, reqs, conc, a.seconds, None, a.client_procs, pid)
                    result["runs"].append({"batching": batching, "protocol": proto, "concurrency": conc, **r})
                    print(json.dumps(result["runs"][-1]), flush=True)
            if batching == "on" and a.soak:
                r = drive(url, model, protocols["binary"], 64, None, a.soak, a.client_procs)
                result["soak"] = {"concurrency": 64, **r}
                print(json.dumps(result["soak"]), flush=True)
    if "overhead" in parts:
        with server(a.device, "--model", "kernelbench-71", "--max-batch-size", "1", *extra) as (url, stack, _,
                                                                                                pid):
            result["http"], result["loop"] = stack
            x = rng.random((1, 32, 64, 128), dtype=np.float32)  # 1 MiB
            req = [http_request(url, "/v2/models/kernelbench-71/infer", *binary_body(x, "input"))]
            drive(url, "kernelbench-71", req, 1, None, 5, 1)
            r = drive(url, "kernelbench-71", req, 1, None, 200, 1, pid)
            result["overhead_1MiB"] = {"input_bytes": x.nbytes, **r}
            blocking_requests(url, req[0], 5)
            result["overhead_1MiB_blocking"] = {"input_bytes": x.nbytes, **blocking_requests(url, req[0], 200)}
    if "codec" in parts:
        result["json_codec"] = codec_throughput()
    md = render(result)
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "load.json").write_text(json.dumps(result, indent=1))
        (a.out / "load.md").write_text(md)
    print(md)
    return 0


def render(res: dict) -> str:
    lines = [f"Device: {res['device']}, batching runs on {res.get('model', 'dcgan')} ({res['cpus']} CPUs, {res['client_procs']} client processes; server HTTP "
             f"parser {res['http']}, event loop {res['loop']}). "
             f"Command: `{res['command']}`", "",
             "| batching | protocol | concurrency | requests/s | p50 ms | p99 ms | forward ms (median) | mean batch "
             "| server CPU ms/request | non-200 |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["runs"]:
        bad = {k: v for k, v in r["codes"].items() if k != "200"}
        lines.append(f"| {r['batching']} | {r['protocol']} | {r['concurrency']} | {r['throughput_rps']:.0f} | "
                     f"{r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['compute_ms_median'] or float('nan'):.2f} | "
                     f"{r['mean_batch'] or float('nan'):.1f} | {r.get('server_cpu_ms_per_request') or float('nan'):.3f} "
                     f"| {bad or 0} |")
    lines.append("")
    for r in res["runs"]:  # a process near 1.0 busy (one core) is the one that ran out of CPU
        if r["concurrency"] == max(x["concurrency"] for x in res["runs"]) and r.get("server_cpu_busy_by_process"):
            lines.append(f"- batching {r['batching']}, {r['protocol']}, concurrency {r['concurrency']}: busy fraction of "
                         f"each server process (start order) {r['server_cpu_busy_by_process']}, of its event-loop "
                         f"thread {r.get('server_loop_busy_by_process')}, of each client process {r['client_cpu_busy']}")
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
    if "overhead_1MiB" in res:
        o = res["overhead_1MiB"]
        lines.append(f"- 1 MiB binary input (kernelbench-71), concurrency 1, {o['ok']} requests: end-to-end p50 "
                     f"{o['p50_ms']:.2f} ms, forward {o['compute_ms_median']:.2f} ms, protocol overhead (end-to-end "
                     f"minus the forward of the same response, median) {o['overhead_ms_median']:.2f} ms")
        if o.get("stages_ms_median"):
            st = o["stages_ms_median"]
            server = sum(v for k, v in st.items() if k != "compute")
            lines.append(f"  - of which in the server's handler (Server-Timing, medians): "
                         + ", ".join(f"{k} {v:.3f} ms" for k, v in st.items() if k != "compute")
                         + f"; the rest ({o['overhead_ms_median'] - server:.2f} ms) is HTTP parsing and writing, "
                           f"the loopback and the client")
    if "overhead_1MiB_blocking" in res:
        o = res["overhead_1MiB_blocking"]
        st = o["stages_ms_median"]
        server = sum(v for k, v in st.items() if k != "compute")
        lines.append(f"- the same with a blocking-socket client (one reused receive buffer), {o['ok']} requests: "
                     f"end-to-end p50 {o['p50_ms']:.2f} ms, forward {o['compute_ms_median']:.2f} ms, protocol "
                     f"overhead {o['overhead_ms_median']:.2f} ms; in the server's handler "
                     + ", ".join(f"{k} {v:.3f}" for k, v in st.items() if k != "compute")
                     + f" ms; the rest {o['overhead_ms_median'] - server:.2f} ms")
    if "json_codec" not in res:
        return "\n".join(lines) + "\n"
    j = res["json_codec"]
    lines.append(f"- JSON codec, {j['tensor_MB']:.1f} MB fp32 tensor ({j['json_MB']:.1f} MB of JSON): decode {j['decode_MBps']:.0f} MB/s, encode "
                 f"{j['encode_MBps']:.0f} MB/s, decode+encode {j['decode_plus_encode_MBps']:.0f} MB/s")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
