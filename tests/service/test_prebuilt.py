"""A server whose kernels are prebuilt starts and serves with no compiler
reachable (nothing on PATH, no CUDA_HOME), as in the Docker image, whose runtime
stage has none. The kernels are this run's own (CI: the image-build replay's),
from the same CONVT_BUILD_DIR."""

from __future__ import annotations

import shutil

import kernels

from .conftest import running_server

COMPILERS = ("nvcc", "gcc", "g++", "c++", "cc", "clang", "ninja")


def test_serves_from_prebuilt_kernels_without_a_compiler(tmp_path_factory, tmp_path):
    empty = tmp_path / "empty-path"
    empty.mkdir()
    assert [t for t in COMPILERS if shutil.which(t, path=str(empty))] == []
    built = kernels.build_info()["backends"]  # built (or loaded) by this test process, before the server starts
    env = {"PATH": str(empty), "CUDA_HOME": None, "CUDA_PATH": None}
    with running_server(tmp_path_factory, "prebuilt", env=env) as server, server.client() as client:
        r = client.get("/health")
        assert r.status_code == 200 and r.json()["passed"], r.text
        kernel = r.json()["kernel"]
        assert kernel["backends"] == built
        # the op's typed entry and the JSON number extension (service/native) too: built by this process's imports,
        # loaded prebuilt there
        assert kernel["from_cache"] == {b: True for b in [*built, "entry", "json"]}
        assert "building the" not in server.logs()
        body = {"inputs": [{"name": "latent", "shape": [1, 100, 1, 1], "datatype": "FP32", "data": [0.1] * 100}]}
        r = client.post("/v2/models/dcgan/infer", json=body)
        assert r.status_code == 200 and r.json()["outputs"][0]["shape"] == [1, 3, 64, 64]
