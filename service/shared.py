"""Shared memory between a front end and the device process (``--frontends``) for large request bodies.

Over the link's socket a 1 MiB input is copied into the kernel by the front end and out of it by the
device process, then once more into pinned memory for the GPU: ~1 ms on the hosts we measured, most of
what ``--frontends`` added to a 1 MiB request (``docs/load-test.md``, eighth session). Instead a front
end reads a large body straight into a slot of a segment both processes map, and hands the device
process the tensor's place in it; on a CUDA server the device process has the segment registered as
pinned memory, so the copy to the GPU is a DMA from where the HTTP body was read.

A slot goes back to its front end's free list when the last view of it there is gone (the body, the
decoded tensor): after the answer came back, so the device process, which syncs its stream before it
answers, has read it. A request the front end stops waiting for (a timeout, a client that left) may
have its slot reused while the device process still holds it queued: that request's rows are then
garbage, and nobody reads them.

Large answers come back the same way through slots of their own (OUT_SLOTS, after the input slots),
which the device process takes and the front end gives back: one byte per output slot at the end of
the segment, set by the device process when it writes the answer there, cleared by the front end when
the last view of that answer is gone (uvicorn may still be sending it after the handler returned). Each
side makes only its own one transition, so neither needs an atomic read-modify-write; the socket message
that carries the answer's place orders the device process's writes before the front end's reads.

The parent creates each segment (a memfd, its pages allocated at once with posix_fallocate, so that a
lack of memory fails here instead of as SIGBUS on a later write) and hands it to both ends of the
link's socket pair before either process starts; a segment that could not be made means no slots, and
every tensor goes over the socket as before.
"""

from __future__ import annotations

import ctypes
import logging
import math
import mmap
import os
import socket
import threading
import weakref

import numpy as np
import torch

log = logging.getLogger("convt.shared")

SLOT_BYTES = 4 << 20
SLOTS = 8  # a front end's large requests in flight; more go over the socket
OUT_SLOTS = 8  # large answers not yet sent on by the front end; more go over the socket
SHARE_MIN = 256 << 10  # below this the socket costs less than a slot's bookkeeping
ALIGN = 64  # each output's start in its slot
_FLAGS_AT = (SLOTS + OUT_SLOTS) * SLOT_BYTES  # one byte per output slot: 1 while the front end holds it
SEGMENT_BYTES = _FLAGS_AT + 4096
_HELLO = b"convt-shared-v1"
_Slot = ctypes.c_uint8 * SLOT_BYTES  # one ctypes type: a type per body size would be cached forever


def hand_over(pair: tuple[socket.socket, socket.socket]) -> None:
    """Parent: one segment for the link ``pair``, sent to both ends (or a note that there is none)."""
    fds = []
    try:
        fd = os.memfd_create("convt-link", os.MFD_CLOEXEC)
        fds.append(fd)
        os.posix_fallocate(fd, 0, SEGMENT_BYTES)
    except (OSError, AttributeError) as exc:
        log.warning("no shared memory for a front end's large requests (%s): they go over its socket", exc)
        for fd in fds:
            os.close(fd)
        fds = []
    try:
        for end in pair:
            socket.send_fds(end, [_HELLO], fds)
    finally:
        for fd in fds:
            os.close(fd)


def receive(sock: socket.socket) -> mmap.mmap | None:
    """Either end, before the link opens: the segment the parent sent on ``sock``, mapped, or None."""
    msg, fds, _, _ = socket.recv_fds(sock, len(_HELLO), 1)
    if msg != _HELLO:
        raise RuntimeError(f"the link did not start with its shared-memory hello (got {msg[:32]!r})")
    if not fds:
        return None
    try:
        return mmap.mmap(fds[0], os.fstat(fds[0]).st_size)
    finally:
        os.close(fds[0])


class FrontSlots:
    """A front end's side: buffers for large bodies, and where a tensor lies in the segment."""

    def __init__(self, segment: mmap.mmap):
        self._segment = segment
        self._base = ctypes.addressof(ctypes.c_uint8.from_buffer(segment))
        self._free = list(range(SLOTS))
        self._held = np.frombuffer(segment, dtype=np.uint8, count=OUT_SLOTS, offset=_FLAGS_AT)

    def take(self, nbytes: int) -> np.ndarray | None:
        """A uint8 array of ``nbytes`` in a free slot, or None (too small, too large, none free)."""
        if not SHARE_MIN <= nbytes <= SLOT_BYTES or not self._free:
            return None
        i = self._free.pop()
        return _lease(self._segment, i, self._free.append, i)[:nbytes]

    def where(self, t: torch.Tensor) -> int | None:
        """The offset of ``t``'s bytes in the input slots when all of them lie there, contiguous; else None."""
        if not t.is_contiguous():
            return None
        start = t.data_ptr() - self._base
        return start if 0 <= start and start + t.numel() * t.element_size() <= SLOTS * SLOT_BYTES else None

    @property
    def answers_held(self) -> int:
        """Output slots whose answer still has a view here (a response uvicorn has not sent yet)."""
        return int(np.count_nonzero(self._held))

    def answer(self, places: list[tuple]) -> list[torch.Tensor]:
        """The tensors of one answer that the device process wrote in an output slot (``DeviceSlots.put``);
        the slot is the device process's again once the last view of any of them is gone."""
        first = places[0][0] // SLOT_BYTES
        for offset, nbytes, _, _ in places:
            if not (SLOTS <= first < SLOTS + OUT_SLOTS and 0 <= offset - first * SLOT_BYTES <= SLOT_BYTES - nbytes):
                raise RuntimeError(f"an answer's place {offset}+{nbytes} is not in one output slot")
        whole = _lease(self._segment, first, self._held.__setitem__, first - SLOTS, 0)
        return [_typed(whole, offset - first * SLOT_BYTES, nbytes, dtype, shape)
                for offset, nbytes, dtype, shape in places]


class DeviceSlots:
    """The device process's side: tensors over the front end's slots."""

    def __init__(self, segment: mmap.mmap):
        self._segment = segment
        self._array = np.frombuffer(segment, dtype=np.uint8)  # holds the mapping for the process's life
        self._held = self._array[_FLAGS_AT:_FLAGS_AT + OUT_SLOTS]
        self._lock = threading.Lock()  # slots are taken on the event loop (put) and the device thread (reserve)
        self._reserved: dict[int, list[bool]] = {}  # output slot -> [handed to the front end]

    def _take(self) -> int | None:
        with self._lock:
            free = np.flatnonzero(self._held == 0)
            if len(free) == 0:
                return None
            self._held[free[0]] = 1
            return int(free[0])

    def pin(self) -> bool:
        """Registers the segment as pinned memory with CUDA, so copies from it to the GPU are DMAs."""
        ptr = self._array.ctypes.data
        err = torch.cuda.cudart().cudaHostRegister(ptr, self._array.nbytes, 0)
        if int(err) != 0:
            log.warning("cudaHostRegister of a front end's segment failed (%s): copies from it are staged", err)
            return False
        return True

    def tensor(self, offset: int, nbytes: int, dtype: torch.dtype, shape: tuple[int, ...]) -> torch.Tensor:
        return _typed(self._array, offset, nbytes, dtype, shape)

    def put(self, tensors: list[torch.Tensor]) -> list[tuple] | None:
        """The tensors copied into a free output slot, as their places (offset, nbytes, dtype, shape); None
        when they are too small or too large together to be worth a slot, or none is free."""
        sizes = [t.numel() * t.element_size() for t in tensors]
        starts = _layout(sizes)
        i = self._take() if starts is not None else None
        if i is None:
            return None
        base = (SLOTS + i) * SLOT_BYTES
        places = []
        try:
            for t, at, n in zip(tensors, starts, sizes):
                # numpy's copy (strided or not), not torch's: this runs on the event loop, where torch would
                # wake its intra-op threads for a copy this size and leave them spinning (13 of 16 cores busy)
                src = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).detach().numpy()
                np.copyto(self._array[base + at:base + at + n].view(src.dtype).reshape(src.shape), src)
                places.append((base + at, n, t.dtype, tuple(t.shape)))
        except BaseException:
            self._held[i] = 0  # no answer will name this slot
            raise
        return places

    def reserve(self, specs: list[tuple[torch.dtype, tuple[int, ...]]]) -> list[torch.Tensor] | None:
        """Tensors of these dtypes and shapes in a free output slot, for the device thread to copy a request's
        outputs into (from the GPU a DMA: the segment is pinned), so that its answer needs no copy here; None
        as for ``put``. The slot is free again when the last of them is gone, unless ``placed`` handed it
        to the front end first (a request that timed out while it ran is never answered)."""
        sizes = [math.prod(shape) * dtype.itemsize for dtype, shape in specs]
        starts = _layout(sizes)
        i = self._take() if starts is not None else None
        if i is None:
            return None
        handed = [False]
        whole = _lease(self._segment, SLOTS + i, self._settle, i, handed)
        self._reserved[i] = handed
        return [_typed(whole, at, n, dtype, shape) for (dtype, shape), at, n in zip(specs, starts, sizes)]

    def _settle(self, i: int, handed: list[bool]) -> None:
        if self._reserved.get(i) is handed:
            del self._reserved[i]
        if not handed[0]:
            self._held[i] = 0  # the front end never heard of it

    def placed(self, tensors: list[torch.Tensor]) -> list[tuple] | None:
        """The places of tensors that ``reserve`` gave, their slot now the front end's to give back; None
        when they are not all in one reserved slot."""
        if not tensors:
            return None
        base = self._array.ctypes.data
        i = (tensors[0].data_ptr() - base) // SLOT_BYTES - SLOTS
        handed = self._reserved.get(i)
        lo, hi = base + (SLOTS + i) * SLOT_BYTES, base + (SLOTS + i + 1) * SLOT_BYTES
        if handed is None or not all(t.is_contiguous() and lo <= t.data_ptr()
                                     and t.data_ptr() + t.numel() * t.element_size() <= hi for t in tensors):
            return None
        handed[0] = True
        return [(t.data_ptr() - base, t.numel() * t.element_size(), t.dtype, tuple(t.shape)) for t in tensors]


def _lease(segment: mmap.mmap, slot: int, on_free, *args) -> np.ndarray:
    """Slot ``slot`` of the segment as a uint8 array; ``on_free(*args)`` runs once the last view of it is gone
    (every view's base is the one ctypes object made here; numpy keeps a memoryview's mmap, not the view)."""
    lease = _Slot.from_buffer(segment, slot * SLOT_BYTES)
    weakref.finalize(lease, on_free, *args)
    return np.frombuffer(lease, dtype=np.uint8)


def _typed(array: np.ndarray, offset: int, nbytes: int, dtype: torch.dtype, shape: tuple[int, ...]) -> torch.Tensor:
    return torch.from_numpy(array[offset:offset + nbytes]).view(dtype).reshape(shape)


def _layout(sizes: list[int]) -> list[int] | None:
    """Where each of tensors of these byte sizes starts in one slot; None when together they are too
    small to be worth a slot or do not fit one."""
    starts, total = [], 0
    for n in sizes:
        starts.append(total)
        total += -(-n // ALIGN) * ALIGN
    return starts if sum(sizes) >= SHARE_MIN and total <= SLOT_BYTES else None
