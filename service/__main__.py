"""``convt-serve`` and ``python -m service``: parse settings, serve with uvicorn."""

from __future__ import annotations

import logging
import sys

from pydantic import ValidationError
from pydantic_settings import SettingsError

EXIT_BAD_SETTINGS = 2
EXIT_STARTUP_FAILED = 3  # uvicorn's own code for a failed lifespan start-up


def _settings_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False))
    return f"{exc}{': ' + str(exc.__cause__) if exc.__cause__ else ''}"


def main(argv: list[str] | None = None) -> int:
    from .settings import parse

    try:
        settings = parse(argv)
    except (ValidationError, SettingsError) as exc:
        print(f"convt-serve: invalid settings: {_settings_error(exc)}", file=sys.stderr)
        return EXIT_BAD_SETTINGS
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from . import workers

    if settings.frontends > 1:
        return workers.serve_frontends(settings)
    try:
        devices = workers.plan(settings)
    except workers.WorkerPlanError as exc:
        print(f"convt-serve: {exc}", file=sys.stderr)
        return EXIT_STARTUP_FAILED
    except Exception as exc:  # the kernels failed to build or load while resolving --device auto
        logging.getLogger("convt.service").error("start-up failed: %s", exc)
        return EXIT_STARTUP_FAILED
    if len(devices) > 1:
        return workers.serve(settings, devices)
    import uvicorn

    from . import serving
    from .app import create_app

    config = serving.config(create_app(settings), settings)
    server = uvicorn.Server(config)
    from .shutdown import exit_0_on_sigterm

    exit_0_on_sigterm()
    serving.run(config, serving.serve(server))
    return 0 if server.started else EXIT_STARTUP_FAILED


if __name__ == "__main__":
    sys.exit(main())
