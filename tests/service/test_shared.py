"""Shared memory between a front end and the device process (service/shared.py): what one end writes in a
slot the other reads in place, and a slot is free again exactly when its last view is gone."""

from __future__ import annotations

import gc

import pytest
import torch

import kernels
import models
from service import shared, workers
from service.remote import pack, unpack
from service.runtime import Runtime

from .conftest import DEVICE


@pytest.fixture()
def ends():
    pair = workers._link_pair()  # the parent's hand-over included, as the server makes it
    try:
        yield shared.FrontSlots(shared.receive(pair[1])), shared.DeviceSlots(shared.receive(pair[0]))
    finally:
        for s in pair:
            s.close()


def test_a_tensor_in_a_slot_is_read_in_place_by_the_other_end(ends):
    front, device = ends
    body = front.take(1 << 20)
    x = torch.from_numpy(body[64:64 + 4 * 32 * 64 * 16]).view(torch.float32).reshape(1, 32, 64, 16)
    x.copy_(torch.randn(1, 32, 64, 16))
    item = pack(x, front)
    assert len(item) == 4 and item[1:] == (x.numel() * 4, torch.float32, (1, 32, 64, 16))  # a place, not bytes
    there = unpack(item, device)
    assert torch.equal(there, x)
    x.mul_(2)  # one memory seen by both processes' mappings
    assert torch.equal(unpack(item, device), x)
    bf16 = torch.from_numpy(body[0:2 * 128 * 1024]).view(torch.bfloat16)  # x's bits among them: NaNs too
    back = unpack(pack(bf16, front), device)
    assert back.dtype == torch.bfloat16 and torch.equal(back.view(torch.int16), bf16.view(torch.int16))


def test_a_slot_is_free_again_when_its_last_view_is_gone(ends):
    front, _ = ends
    taken = [front.take(shared.SHARE_MIN) for _ in range(shared.SLOTS)]
    assert all(b is not None for b in taken)
    assert front.take(shared.SHARE_MIN) is None  # all in use: the caller falls back to its own buffer
    tensor = torch.from_numpy(taken[0][128:256])  # a view of a view
    del taken[0]
    gc.collect()
    assert front.take(shared.SHARE_MIN) is None  # the tensor still holds its slot
    del tensor
    gc.collect()
    again = front.take(shared.SLOT_BYTES)
    assert again is not None and len(again) == shared.SLOT_BYTES


def test_small_large_and_outside_tensors_are_not_shared(ends):
    front, _ = ends
    assert front.take(shared.SHARE_MIN - 1) is None
    assert front.take(shared.SLOT_BYTES + 1) is None
    own = torch.randn(1 << 18)
    assert front.where(own) is None and len(pack(own, front)) == 2  # bytes over the socket
    body = front.take(1 << 20)
    strided = torch.from_numpy(body).view(torch.float32)[::2]
    assert front.where(strided) is None


def test_an_answer_comes_back_through_an_output_slot_held_until_its_last_view_is_gone(ends):
    front, device = ends
    gen = torch.Generator().manual_seed(0)
    outputs = [torch.randn(3, 50, 700, generator=gen), torch.randn(1, 5, generator=gen).bfloat16(),
               torch.randint(0, 2, (7,), generator=gen).bool(), torch.randn(200, 400, generator=gen).t()]
    places = device.put(outputs)
    assert places is not None and all(p[0] % shared.ALIGN == 0 for p in places)
    got = front.answer(places)
    assert front.answers_held == 1
    assert all(a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b) for a, b in zip(got, outputs))
    keep = got[1][0]  # one view of one of them keeps the slot
    del got
    gc.collect()
    assert front.answers_held == 1 and keep.dtype == torch.bfloat16
    del keep
    gc.collect()
    assert front.answers_held == 0


def test_answers_too_small_too_large_or_past_the_free_slots_go_over_the_socket(ends):
    front, device = ends
    assert device.put([torch.zeros(shared.SHARE_MIN // 4 - 1)]) is None
    assert device.put([torch.zeros(shared.SLOT_BYTES // 4 + 1)]) is None
    assert device.put([]) is None
    held = [front.answer(device.put([torch.full((shared.SHARE_MIN // 4,), float(i))])) for i in range(shared.OUT_SLOTS)]
    assert front.answers_held == shared.OUT_SLOTS
    assert device.put([torch.ones(shared.SHARE_MIN // 4)]) is None  # every slot is still being sent
    assert [float(h[0][0]) for h in held] == [float(i) for i in range(shared.OUT_SLOTS)]  # none overwritten
    del held[3]
    gc.collect()
    again = device.put([torch.ones(shared.SHARE_MIN // 4)])
    assert again is not None and again[0][0] // shared.SLOT_BYTES == shared.SLOTS + 3


def test_a_reserved_slot_is_the_front_ends_once_placed_and_comes_back_if_never_answered(ends):
    front, device = ends
    specs = [(torch.float32, (2, 300, 400)), (torch.bfloat16, (3, 5))]
    outs = device.reserve(specs)
    assert [(t.dtype, tuple(t.shape)) for t in outs] == specs and front.answers_held == 1
    for t in outs:
        t.copy_(torch.randn(t.shape))  # as the device thread's copy from the GPU would
    want = [t.clone() for t in outs]
    places = device.placed(outs)
    assert places is not None and device.placed([torch.ones(3)]) is None  # not in a reserved slot
    del outs
    gc.collect()
    assert front.answers_held == 1  # handed over: the device process's views going does not free it
    got = front.answer(places)
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    del got
    gc.collect()
    assert front.answers_held == 0
    # a request that timed out while it ran: reserved, filled, never answered
    lost = device.reserve(specs)
    assert front.answers_held == 1
    del lost
    gc.collect()
    assert front.answers_held == 0
    assert device.reserve([(torch.float32, (10,))]) is None  # too small for a slot: pinned memory as before


def test_the_device_thread_writes_each_requests_outputs_where_its_host_says(ends):
    """Runtime.infer_batch with ``hosts``: the device process's path on CUDA (its copies from the GPU land in
    the segment); run here on CONVT_TEST_DEVICE, a batch of three requests, one of them without a host."""
    front, device = ends
    spec = models.load_model("dcgan")
    spec.module.to(DEVICE).eval()
    kernels.swap_conv_transpose2d(spec.module)
    runtime = Runtime(spec, torch.device(DEVICE), torch.float32, {}, [], {}, 0)
    try:
        gen = torch.Generator().manual_seed(3)
        reqs = [[torch.randn(rows, 100, 1, 1, generator=gen)] for rows in (8, 1, 6)]
        want, _ = runtime._forward(reqs)
        got, _ = runtime._forward(reqs, [device.reserve, None, device.reserve])
        assert front.answers_held == 2  # 8 and 6 rows of 3x64x64 fp32 are large enough for a slot; 1 row is not
        for g, w in zip(got, want):
            assert torch.equal(g[0], w[0]) and g[0].abs().sum() > 0
        assert [device.placed(g) is not None for g in got] == [True, False, True]
    finally:
        runtime.close()
