"""``python -m service.native``: build (or load) the JSON number extension and print
where it came from; the Docker image runs it at build time so a container compiles nothing."""

from __future__ import annotations

import json
import logging

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")

from kernels import _build  # noqa: E402
from service import native  # noqa: E402, F401

print(json.dumps({"json": {"from_cache": _build.STATE.cached["json"], "seconds": _build.STATE.build_seconds["json"],
                           "build_dir": _build.STATE.build_dir}}, indent=2))
