"""Shared memory between a front end and the device process (service/shared.py): what one end writes in a
slot the other reads in place, and a slot is free again exactly when its last view is gone."""

from __future__ import annotations

import gc

import pytest
import torch

from service import shared, workers
from service.remote import pack, unpack


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
