"""glibc malloc settings for a server process: keep freed request-sized buffers mapped.

A large request's buffers (the body, the decoded tensor, the output, the response; ~1 MiB each for a
1 MiB input) live for one request. With glibc's defaults, freeing them shrinks the heap back (the trim
threshold follows the largest mmapped chunk freed, here 2 MiB), so the next request maps its buffers
afresh and takes a page fault per 4 KiB of each: ~0.4 ms per MiB on the machines we measured, more
than the copies themselves. A 1 MiB round trip between a front end and the device process took 3.3 ms
with the defaults and 1.0 ms with these settings (``docs/load-test.md``, eighth session).

The cost: up to ``TRIM_BYTES`` of freed heap stays resident per arena after a burst of large requests.
glibc's own environment variables win: with ``MALLOC_MMAP_THRESHOLD_`` or ``MALLOC_TRIM_THRESHOLD_``
set, nothing here changes.
"""

from __future__ import annotations

import ctypes
import logging
import os

log = logging.getLogger("convt.service")

M_TRIM_THRESHOLD = -1  # from glibc's malloc.h
M_MMAP_THRESHOLD = -3
MMAP_BYTES = 32 << 20  # below this, buffers come from the heap (glibc's own ceiling for its dynamic threshold)
TRIM_BYTES = 64 << 20  # free heap kept at its top before it is given back
OPERATOR_KNOBS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")


def keep_request_buffers() -> bool:
    """Applies the settings above to this process; False where the operator set glibc's variables or
    the C library is not glibc (musl has no mallopt: nothing to tune there)."""
    if any(k in os.environ for k in OPERATOR_KNOBS):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    ok = mallopt(M_MMAP_THRESHOLD, MMAP_BYTES) == 1 and mallopt(M_TRIM_THRESHOLD, TRIM_BYTES) == 1
    if not ok:
        log.warning("mallopt refused the heap settings; large requests will page-fault their buffers")
    return ok
