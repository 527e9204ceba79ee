"""The device process of ``--frontends`` alone: its CPU per request and requests/s.

Starts a real device process (``service.workers._device_main``) on ``--links``
socket pairs and drives each link from this process as a front end would, with
``--concurrency`` batch-1 inference calls in flight on each, no HTTP. With a
near-free model (``bench.tiny_model:factory``, the default) what is measured is
the device process's own work per request: frames in and out, the batcher, the
hand-off to the device thread.

    python -m bench.device_link [--device cpu] [--links 2] [--concurrency 32] [--seconds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import time
from pathlib import Path

import torch

from service import shared, workers
from service.link import Link
from service.remote import pack
from service.settings import Settings


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _drive(socks, concurrency: int, seconds: float, pid: int, shape) -> dict:
    for s in socks:
        shared.receive(s)  # the parent's first message; this driver sends its tensors over the socket
    links = [await Link.open(s) for s in socks]
    await asyncio.gather(*(link.call("hello") for link in links))
    inputs = [[pack(torch.randn(*shape))] for _ in range(64)]
    for link in links:  # warm-up: graphs, first batches
        await asyncio.gather(*(link.call("infer", (inputs[i], 0.0)) for i in range(concurrency)))
    done = [0]
    stop = time.perf_counter() + seconds

    async def loop(link, k):
        i = k
        while time.perf_counter() < stop:
            await link.call("infer", (inputs[i % 64], 0.0))
            done[0] += 1
            i += 1

    cpu0, t0 = _cpu(pid), time.perf_counter()
    await asyncio.gather(*(loop(link, k) for link in links for k in range(concurrency)))
    elapsed, cpu = time.perf_counter() - t0, _cpu(pid) - cpu0
    for link in links:
        link.close()
    return {"requests": done[0], "requests_per_s": done[0] / elapsed, "device_cpu_us_per_request": cpu * 1e6 / done[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--model", default="bench.tiny_model:factory")
    ap.add_argument("--links", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=32, help="calls in flight on each link")
    ap.add_argument("--seconds", type=float, default=5.0)
    a = ap.parse_args()
    settings = Settings(model=a.model, device=a.device, log_level="warning", frontends=a.links)
    pairs = [workers._link_pair() for _ in range(a.links)]  # as the server makes them, shared memory included
    ready = multiprocessing.get_context("spawn").Array("b", 1, lock=False)
    proc = multiprocessing.get_context("spawn").Process(
        target=workers._device_main, args=(settings, [p[0] for p in pairs], ready, os.getpid()))
    proc.start()
    for p in pairs:
        p[0].close()
    try:
        import uvloop

        result = uvloop.run(_drive([p[1] for p in pairs], a.concurrency, a.seconds, proc.pid, (1, 100, 1, 1)))
    finally:
        proc.join(timeout=30)
        if proc.exitcode is None:
            proc.kill()
    print(f"device process, {a.links} links x {a.concurrency} calls in flight, {a.model} on {a.device}: "
          f"{result['requests_per_s']:.0f} requests/s, {result['device_cpu_us_per_request']:.1f} us of its CPU "
          f"a request ({result['requests']} requests)")


if __name__ == "__main__":
    main()
