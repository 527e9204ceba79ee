"""``--workers N``: one server process per GPU, all on one port.

The parent builds (or loads) the kernels once, binds the socket, and spawns N
workers that serve on the inherited socket, worker i on cuda:i (or all on the
CPU), each with its own model copy and parity gate. Readiness is shared through
one byte per worker (service/group.py).

The parent forwards SIGTERM/SIGINT to the workers and exits 0 once they have
stopped. A worker that exits on its own (start-up failure, crash, a kill) is not
restarted: the parent stops the others and exits non-zero, so the container's
supervisor (Docker's restart policy, Kubernetes) restarts the whole server with
every worker on its device, instead of this process hiding a broken GPU.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
import socket
import sys
import time
from multiprocessing.connection import wait

from . import shared
from .group import WorkerGroup
from .settings import Settings

log = logging.getLogger("convt.workers")

EXIT_STARTUP_FAILED = 3
EXIT_WORKER_DIED = 4  # a worker was killed by a signal, or exited 0 while not asked to stop
STOP_GRACE_SECONDS = 5  # after a worker's own drain (--shutdown-timeout-s): its lifespan shutdown and exit


class WorkerPlanError(ValueError):
    """The workers asked for cannot be placed on the devices there are."""


def _cuda_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def plan(settings: Settings) -> list[str]:
    """The device of each worker: cuda:i for worker i on CUDA, cpu for all on the CPU."""
    device = settings.device
    if device == "cpu" or device.startswith("cuda:"):
        return [device] * (settings.workers or 1)
    visible = _cuda_count()
    if (settings.workers or 1) == 1 and visible <= 1:
        return [device]  # one process, as without --workers: its start-up resolves auto and checks the device
    if device == "auto":
        device = settings.torch_device().type  # imports the kernels: auto picks CUDA only where they are built
        if device == "cpu":
            return ["cpu"] * (settings.workers or 1)
    count = settings.workers or max(1, visible)
    if count > 1 and count > visible:
        raise WorkerPlanError(f"--workers {count} needs {count} CUDA devices, one per worker, but torch sees "
                              f"{visible} (CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})")
    return ["cuda"] if count == 1 else [f"cuda:{i}" for i in range(count)]


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, port), family=family, backlog=2048)
    sock.set_inheritable(True)
    return sock


def _prepare(settings: Settings) -> socket.socket | None:
    """The kernels built (here once: N processes building into one directory at once would race) and the
    socket bound; None when either fails."""
    try:
        import kernels

        info = kernels.build_info()
        sock = bind(settings.host, settings.port)
    except Exception as exc:  # a kernel that does not build, a port that is taken
        log.error("start-up failed: %s", exc)
        return None
    log.info("kernels: backends %s (build dir %s)", info["backends"], info["build_dir"])
    return sock


def serve(settings: Settings, devices: list[str]) -> int:
    """Runs the workers until a signal or a worker's exit; returns the exit code."""
    sock = _prepare(settings)
    if sock is None:
        return EXIT_STARTUP_FAILED
    host, port = sock.getsockname()[:2]
    ctx = multiprocessing.get_context("spawn")  # a forked CUDA context is unusable; spawned workers start clean
    flags = ctx.Array("b", len(devices), lock=False)
    procs = []
    for i, device in enumerate(devices):
        worker_settings = settings.model_copy(update={"device": device, "host": host, "port": port})
        p = ctx.Process(target=_worker_main, name=f"convt-worker-{i}",
                        args=(worker_settings, i, len(devices), sock, flags, os.getpid()))
        p.start()
        procs.append(p)
    sock.close()  # the workers hold it now
    log.info("%d workers on http://%s:%d: %s", len(procs), host, port,
             ", ".join(f"worker {i} (pid {p.pid}) on {d}" for i, (p, d) in enumerate(zip(procs, devices))))
    return _supervise(procs, flags, settings.shutdown_timeout_s + STOP_GRACE_SECONDS)


def serve_frontends(settings: Settings) -> int:
    """``--frontends N``: one device process and N front ends on the port, each with a socket pair to the
    device process; supervised as workers are (any exit stops all)."""
    sock = _prepare(settings)
    if sock is None:
        return EXIT_STARTUP_FAILED
    try:
        device = settings.torch_device().type if settings.device == "auto" else settings.device
    except Exception as exc:
        log.error("start-up failed: %s", exc)
        return EXIT_STARTUP_FAILED
    host, port = sock.getsockname()[:2]
    settings = settings.model_copy(update={"device": device, "host": host, "port": port})
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Array("b", 1, lock=False)  # the device process's parity result, read by every front end
    pairs = [_link_pair() for _ in range(settings.frontends)]
    device_proc = ctx.Process(target=_device_main, name="convt-device",
                              args=(settings, [a for a, _ in pairs], ready, os.getpid()))
    device_proc.start()
    procs = [device_proc]  # first: its exit marks flag 0, the one readiness flag, down
    for i, (_, b) in enumerate(pairs):
        p = ctx.Process(target=_worker_main, name=f"convt-frontend-{i}",
                        args=(settings, i, settings.frontends, sock, ready, os.getpid(), b))
        p.start()
        procs.append(p)
    sock.close()
    for a, b in pairs:
        a.close()
        b.close()
    log.info("device process (pid %d) on %s; %d front ends on http://%s:%d: pids %s", device_proc.pid, device,
             settings.frontends, host, port, ", ".join(str(p.pid) for p in procs[1:]))
    return _supervise(procs, ready, settings.shutdown_timeout_s + 2 * STOP_GRACE_SECONDS,
                      ["the device process"] + [f"front end {i}" for i in range(settings.frontends)])


# Bytes a link's sender may have in flight. The default (~208 KiB) splits a 1 MiB tensor into five
# writes, each waiting for the other process to read; the kernel caps the request at net.core.wmem_max.
LINK_BUFFER_BYTES = 4 << 20


def _link_pair() -> tuple[socket.socket, socket.socket]:
    pair = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    for s in pair:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, LINK_BUFFER_BYTES)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, LINK_BUFFER_BYTES)
    shared.hand_over(pair)  # the segment for large bodies, the first message each end reads
    return pair


def _device_main(settings: Settings, socks: list[socket.socket], ready, parent: int) -> None:
    logging.basicConfig(level=settings.log_level.upper(),
                        format="%(asctime)s [device] %(name)s %(levelname)s %(message)s")
    import torch

    from . import device as device_process
    from . import serving

    if settings.device.startswith("cuda:") and int(settings.device[5:]) < _cuda_count():
        torch.cuda.set_device(torch.device(settings.device))
    config = serving.config(None, settings)
    sys.exit(serving.run(config, device_process.serve(settings, socks, ready, parent)))


def _supervise(procs: list[multiprocessing.Process], flags, grace: float, labels: list[str] | None = None) -> int:
    """``labels``: how the log names each process (default: worker i)."""
    labels = labels or [f"worker {i}" for i in range(len(procs))]
    stopping: list[str] = []

    def on_signal(signum, _frame):
        if not stopping:
            log.info("%s: stopping %d workers", signal.Signals(signum).name, len(procs))
            stopping.append(signal.Signals(signum).name)
            _terminate(procs)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    code = 0
    deadline = None
    while any(p.exitcode is None for p in procs):
        if stopping and deadline is None:
            deadline = time.monotonic() + grace
        if deadline is not None and time.monotonic() > deadline:
            for p in procs:
                if p.exitcode is None:
                    log.error("worker %s did not stop in %g s: killing it", p.name, grace)
                    p.kill()
            deadline = float("inf")
        wait([p.sentinel for p in procs if p.exitcode is None], timeout=0.5)
        for i, p in enumerate(procs):
            if p.exitcode is not None and not stopping:
                if i < len(flags):
                    flags[i] = 0
                code = p.exitcode if p.exitcode > 0 else EXIT_WORKER_DIED
                how = (f"was killed by {signal.Signals(-p.exitcode).name}" if p.exitcode < 0
                       else f"exited with {p.exitcode}")
                log.error("%s (pid %d) %s: stopping the others; the server exits %d", labels[i], p.pid, how, code)
                stopping.append("worker exit")
                _terminate(procs)
    for p in procs:
        p.join()
    return code


def _terminate(procs: list[multiprocessing.Process]) -> None:
    for p in procs:
        if p.exitcode is None:
            p.terminate()


def _worker_main(settings: Settings, index: int, count: int, sock: socket.socket, flags, parent: int,
                 link: socket.socket | None = None) -> None:
    """A spawned worker: one uvicorn server on the shared socket, on its own device; with ``link``, a front
    end of the device process at its other end."""
    os.environ["CONVT_WORKER_INDEX"] = str(index)  # for user factories that log or place by worker
    what = "worker" if link is None else "frontend"
    logging.basicConfig(level=settings.log_level.upper(),
                        format=f"%(asctime)s [{what} {index}] %(name)s %(levelname)s %(message)s")
    import torch
    import uvicorn

    from . import serving
    from .app import create_app

    if link is not None:
        torch.set_num_threads(1)  # a front end decodes and encodes; the device process computes
    elif settings.device == "cpu" and "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // count))  # N workers share the cores
    device = torch.device(settings.device)
    if link is None and device.type == "cuda" and device.index < _cuda_count():  # else start-up refuses it
        torch.cuda.set_device(device)
    group = WorkerGroup(index=index, count=count, flags=flags)
    config = serving.config(create_app(settings, group, link), settings)
    server = uvicorn.Server(config)
    serving.run(config, _serve(server, sock, parent, index))
    sys.exit(0 if server.started else EXIT_STARTUP_FAILED)


async def _serve(server, sock: socket.socket, parent: int, index: int) -> None:
    from . import serving

    host, port = sock.getsockname()[:2]  # read now: a stop right after start-up closes the socket
    task = asyncio.get_running_loop().create_task(serving.serve(server, sockets=[sock]))
    announced = False
    while not task.done():
        if server.started and not announced:
            # uvicorn announces only the sockets it binds itself; this is that line for a shared one
            log.info("worker %d serving on http://%s:%d", index, host, port)
            announced = True
        # a parent killed outright (SIGKILL) cannot forward a signal; its workers must not linger on the port
        if os.getppid() != parent and not server.should_exit:
            log.error("the parent process is gone: stopping")
            server.should_exit = True
        await asyncio.wait([task], timeout=1 if announced else 0.05)
    await task
