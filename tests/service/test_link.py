"""service/link.py over a real Unix socket pair: frames of every size (decoded in the stage, or
read into their own buffer), many calls in flight, errors and a closed link."""

from __future__ import annotations

import asyncio
import socket

import numpy as np
import pytest
import torch

from service.link import STAGE_BYTES, Link, LinkClosed, RemoteError
from service.remote import pack, unpack


async def _pair(handler):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return await Link.open(a), await Link.open(b, handler)


async def _echo(kind, payload):
    if kind == "fail":
        raise ValueError(f"refused {payload!r}")
    if kind == "sleep":
        await asyncio.sleep(payload)
    return payload


@pytest.mark.parametrize("nbytes", [0, 1, 4096, STAGE_BYTES // 2 - 100, STAGE_BYTES // 2 + 100, 3 * STAGE_BYTES + 7])
def test_arrays_of_every_size_arrive_whole_and_writable(nbytes):
    async def main():
        caller, callee = await _pair(_echo)
        x = np.random.default_rng(nbytes).integers(0, 255, nbytes, dtype=np.uint8)
        got = await caller.call("echo", {"x": x, "tag": "t"})
        caller.close()
        return x, got

    x, got = asyncio.run(main())
    assert got["tag"] == "t" and got["x"].dtype == np.uint8
    np.testing.assert_array_equal(got["x"], x)
    assert got["x"].flags.writeable  # torch.from_numpy takes it without a warning


def test_many_calls_in_flight_get_their_own_answers():
    async def main():
        caller, _ = await _pair(_echo)
        rng = np.random.default_rng(0)
        # sizes that mix small frames with ones read into their own buffers, all written back to back
        sent = [rng.random(int(n)) for n in rng.integers(1, STAGE_BYTES // 4, 64)]
        got = await asyncio.gather(*(caller.call("echo", (i, x)) for i, x in enumerate(sent)))
        caller.close()
        return sent, got

    sent, got = asyncio.run(main())
    for i, (x, (j, y)) in enumerate(zip(sent, got)):
        assert i == j
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool])
def test_tensors_cross_bit_for_bit(dtype):
    t = (torch.randn(3, 5, 7) * 100).to(dtype)

    async def main():
        caller, _ = await _pair(_echo)
        back = await caller.call("echo", [pack(t), pack(t[:, 1])])  # a non-contiguous view too
        caller.close()
        return back

    whole, column = (unpack(b) for b in asyncio.run(main()))
    assert whole.dtype == dtype and torch.equal(whole, t) and torch.equal(column, t[:, 1])


def test_errors_come_back_by_type_name_and_a_closed_link_fails_what_is_pending():
    async def main():
        caller, callee = await _pair(_echo)
        with pytest.raises(RemoteError) as err:
            await caller.call("fail", 7)
        pending = caller.call("sleep", 30)
        await asyncio.sleep(0.05)
        callee.close()
        with pytest.raises(LinkClosed):
            await pending
        with pytest.raises(LinkClosed):
            await caller.call("echo", 1)
        return err.value

    err = asyncio.run(main())
    assert err.kind == "ValueError" and err.message == "refused 7"


def test_immediate_calls_are_answered_from_their_futures():
    async def main():
        loop = asyncio.get_running_loop()
        later: list[asyncio.Future] = []

        def start(payload):
            if payload == "refuse":
                raise KeyError("refused at once")
            fut = loop.create_future()
            later.append(fut)
            return fut

        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        caller = await Link.open(a)
        await Link.open(b, immediate={"work": (start, lambda r: r * 2)})
        with pytest.raises(RemoteError) as refused:
            await caller.call("work", "refuse")
        ok, failed, cancelled = (caller.call("work", i) for i in range(3))
        while len(later) < 3:
            await asyncio.sleep(0.01)
        later[0].set_result(21)
        later[1].set_exception(ValueError("bad row"))
        later[2].cancel()
        results = await asyncio.gather(ok, failed, cancelled, return_exceptions=True)
        caller.close()
        return refused.value, results

    refused, (ok, failed, cancelled) = asyncio.run(main())
    assert refused.kind == "KeyError"
    assert ok == 42
    assert isinstance(failed, RemoteError) and (failed.kind, failed.message) == ("ValueError", "bad row")
    assert isinstance(cancelled, RemoteError) and cancelled.kind == "CancelledError"
