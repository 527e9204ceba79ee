"""A test-only user model whose worker 1 does not finish loading until the test
says so, to catch the server between one ready worker and two.

Served as ``--model tests.service.gated_model:factory --workers 2`` with
CONVT_TEST_GATE naming a file: worker 1 (CONVT_WORKER_INDEX=1, set by the
server in each worker) waits for that file to exist. Nothing of this lives in
production code.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import models
from models import dcgan

GATE_TIMEOUT = 300  # a test that never opens the gate still ends


def factory() -> models.ModelSpec:
    if os.environ.get("CONVT_WORKER_INDEX") == "1":
        gate = Path(os.environ["CONVT_TEST_GATE"])
        deadline = time.monotonic() + GATE_TIMEOUT
        while not gate.exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the test never created {gate}")
            time.sleep(0.1)
    return dcgan.build()
