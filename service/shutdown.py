"""Exit status after a SIGTERM drain.

uvicorn drains on SIGTERM (stops accepting, answers the requests it accepted,
up to --shutdown-timeout-s) and then re-raises the signal against the original
handler, so that with the default handler the process dies by SIGTERM (status
-15, or 143 in a shell). A drain that a supervisor asked for is a clean stop:
Kubernetes, systemd and Docker should see 0, not a crash.
"""

from __future__ import annotations

import signal


def _clean_exit(signum: int, frame) -> None:
    raise SystemExit(0)


def exit_0_on_sigterm() -> None:
    """Installed before uvicorn runs: uvicorn swaps in its own handler while it
    serves (and drains), and calls this one once it has finished; a SIGTERM
    before serving starts has nothing to drain and exits 0 at once."""
    signal.signal(signal.SIGTERM, _clean_exit)
