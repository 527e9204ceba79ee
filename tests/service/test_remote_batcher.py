"""A front end's calls to a real device process (``--frontends``): the requests of one event-loop turn
that can share a batch go in one call and come back split, each with its own answer; a member that makes
the forward fail fails alone; requests that cannot share a batch go alone.

The device process is the real one (``workers._device_main``, spawned as the server spawns it) serving
the test model of ``slow_model.py`` on the CPU; this process plays the front end's side with the real
``RemoteBatcher`` over the real link, so that every request of a turn is submitted at once (over HTTP,
which turn a request lands in is up to the kernel).
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import os

import pytest
import torch

from service import remote, workers
from service.metrics import Metrics
from service.settings import Settings

SLOW_MARK, POISON_MARK = 4242.0, -4343.0  # slow_model.py's marks (not imported: the server loads that model)


@pytest.fixture(scope="module")
def device_process():
    settings = Settings(model="tests.service.slow_model:factory", device="cpu", max_batch_size=8, frontends=2,
                        max_queue_delay_us=0, log_level="warning")
    ours, theirs = workers._link_pair()
    ready = multiprocessing.get_context("spawn").Array("b", 1, lock=False)
    proc = multiprocessing.get_context("spawn").Process(target=workers._device_main,
                                                        args=(settings, [theirs], ready, os.getpid()))
    proc.start()
    theirs.close()
    yield ours, ready
    ours.close()  # the device process stops once its one link is closed
    proc.join(60)
    assert proc.exitcode == 0


def reference(x: torch.Tensor) -> torch.Tensor:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)  # models.registry.INIT_SEED: the device process's parameters
        layer = torch.nn.ConvTranspose2d(4, 2, 3, stride=2)
    with torch.no_grad():
        return layer(x)


def calls(metrics: Metrics) -> tuple[float, float]:
    """Calls made and requests they carried, from the front end's histogram."""
    values = {s.name: s.value for m in metrics.registry.collect() if m.name == "convt_frontend_requests_per_call"
              for s in m.samples}
    return values["convt_frontend_requests_per_call_count"], values["convt_frontend_requests_per_call_sum"]


def test_one_turns_requests_go_in_one_call(device_process):
    sock, ready = device_process
    gen = torch.Generator().manual_seed(2)
    same = [torch.randn(rows, 4, 5, 5, generator=gen) for rows in (1, 2, 1, 3, 1)]  # 8 rows: max_batch_size
    other = torch.randn(1, 4, 6, 6, generator=gen)  # another shape: its own call
    poison = torch.randn(1, 4, 5, 5, generator=gen)
    poison.view(-1)[-1] = POISON_MARK

    async def scenario():
        metrics = Metrics(device=False, frontend=True)
        runtime, batcher, _ = await remote.connect(sock, ready, 8, metrics.frontend_calls)
        try:
            answers = await asyncio.gather(*(batcher.submit([x]) for x in same + [other]))
            after_first = calls(metrics)
            extra = torch.randn(1, 4, 5, 5, generator=gen)  # 9 rows with the first five: two calls
            more = await asyncio.gather(*(batcher.submit([x]) for x in same + [extra]))
            after_second = calls(metrics)
            # a large body read into shared memory (service/shared.py): the device process reads it in place
            big = torch.randn(700, 4, 5, 5, generator=gen)
            buf = runtime.host_buffer(big.numel() * 4)
            assert runtime.slots is not None and runtime.slots.where(torch.from_numpy(buf)) is not None
            shared_in = torch.from_numpy(buf).view(torch.float32).reshape(big.shape)
            shared_in.copy_(big)
            big_out = await batcher.submit([shared_in])
            del buf, shared_in
            held = runtime.slots.answers_held  # its answer (677 KB) came back through an output slot
            big_out = ([big_out[0][0].clone()], big_out[1])
            await asyncio.sleep(0)
            gc.collect()
            assert (held, runtime.slots.answers_held) == (1, 0)  # and the slot was given back with its last view
            after_big = calls(metrics)
            mixed = await asyncio.gather(*(batcher.submit([x]) for x in same[:2] + [poison] + same[2:4]),  # 8 rows
                                         return_exceptions=True)
            return answers, more, mixed, after_first, after_big, calls(metrics), big, big_out
        finally:
            runtime.close()

    answers, more, mixed, first, second, third, big, (big_out, _) = asyncio.run(scenario())
    torch.testing.assert_close(big_out[0], reference(big), rtol=1e-5, atol=1e-5)
    for x, (outputs, seconds) in zip(same + [other], answers):
        assert seconds > 0
        torch.testing.assert_close(outputs[0], reference(x), rtol=1e-5, atol=1e-5)
    assert first == (2, 6), first  # the five of one shape together, the other alone
    for x, (outputs, _) in zip(same, more):
        torch.testing.assert_close(outputs[0], reference(x), rtol=1e-5, atol=1e-5)
    assert second[0] - first[0] == 2 + 1 and second[1] - first[1] == 6 + 1, second
    assert isinstance(mixed[2], ValueError) and "poisoned" in str(mixed[2])
    for x, got in zip(same[:4], mixed[:2] + mixed[3:]):
        torch.testing.assert_close(got[0][0], reference(x), rtol=1e-5, atol=1e-5)
    # the group of five failed once whole, then each member went alone
    assert third[0] - second[0] == 1 + 5 and third[1] - second[1] == 5 + 5, third
