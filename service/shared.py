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
garbage, and nobody reads them. Outputs still cross the socket.

The parent creates each segment (a memfd, its pages allocated at once with posix_fallocate, so that a
lack of memory fails here instead of as SIGBUS on a later write) and hands it to both ends of the
link's socket pair before either process starts; a segment that could not be made means no slots, and
every tensor goes over the socket as before.
"""

from __future__ import annotations

import ctypes
import logging
import mmap
import os
import socket
import weakref

import numpy as np
import torch

log = logging.getLogger("convt.shared")

SLOT_BYTES = 4 << 20
SLOTS = 8  # a front end's large requests in flight; more go over the socket
SHARE_MIN = 256 << 10  # below this the socket costs less than a slot's bookkeeping
_HELLO = b"convt-shared-v1"
_Slot = ctypes.c_uint8 * SLOT_BYTES  # one ctypes type: a type per body size would be cached forever


def hand_over(pair: tuple[socket.socket, socket.socket]) -> None:
    """Parent: one segment for the link ``pair``, sent to both ends (or a note that there is none)."""
    fds = []
    try:
        fd = os.memfd_create("convt-link", os.MFD_CLOEXEC)
        fds.append(fd)
        os.posix_fallocate(fd, 0, SLOTS * SLOT_BYTES)
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
        self._size = len(segment)
        self._free = list(range(self._size // SLOT_BYTES))

    def take(self, nbytes: int) -> np.ndarray | None:
        """A uint8 array of ``nbytes`` in a free slot, or None (too small, too large, none free)."""
        if not SHARE_MIN <= nbytes <= SLOT_BYTES or not self._free:
            return None
        i = self._free.pop()
        slot = _Slot.from_buffer(self._segment, i * SLOT_BYTES)
        weakref.finalize(slot, self._free.append, i)  # every view's base is this object: the last one frees it
        return np.frombuffer(slot, dtype=np.uint8)[:nbytes]

    def where(self, t: torch.Tensor) -> int | None:
        """The offset of ``t``'s bytes in the segment when all of them lie there, contiguous; else None."""
        if not t.is_contiguous():
            return None
        start = t.data_ptr() - self._base
        return start if 0 <= start and start + t.numel() * t.element_size() <= self._size else None


class DeviceSlots:
    """The device process's side: tensors over the front end's slots."""

    def __init__(self, segment: mmap.mmap):
        self._array = np.frombuffer(segment, dtype=np.uint8)  # holds the mapping for the process's life

    def pin(self) -> bool:
        """Registers the segment as pinned memory with CUDA, so copies from it to the GPU are DMAs."""
        ptr = self._array.ctypes.data
        err = torch.cuda.cudart().cudaHostRegister(ptr, self._array.nbytes, 0)
        if int(err) != 0:
            log.warning("cudaHostRegister of a front end's segment failed (%s): copies from it are staged", err)
            return False
        return True

    def tensor(self, offset: int, nbytes: int, dtype: torch.dtype, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.from_numpy(self._array[offset:offset + nbytes]).view(dtype).reshape(shape)
