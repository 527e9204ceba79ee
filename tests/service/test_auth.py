"""Bearer-token auth (CONVT_API_TOKEN) on a real server: the health probes stay
open, everything else needs the token, and the token shows up nowhere."""

from __future__ import annotations

import re
import secrets
import subprocess

import httpx
import pytest

from service.settings import parse

from .conftest import ROOT, _env, running_server, server_command

TOKEN = secrets.token_urlsafe(32)
INFER = "/v2/models/slow/infer"
REQUEST = {"inputs": [{"name": "input__0", "shape": [1, 4, 5, 5], "datatype": "FP32", "data": [0.0] * 100}]}
PROTECTED = [("GET", "/v2"), ("GET", "/v2/models/slow"), ("GET", "/v2/models/slow/ready"), ("POST", INFER),
             ("GET", "/metrics"), ("GET", "/health"), ("GET", "/openapi.json"), ("GET", "/v3/unknown")]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(tmp_path_factory, "auth", "--model", "tests.service.slow_model:factory",
                        env={"CONVT_API_TOKEN": TOKEN}) as s:
        yield s


def call(server, method: str, path: str, authorization: str | None = None, **kw) -> httpx.Response:
    headers = {} if authorization is None else {"Authorization": authorization}
    with server.client() as c:
        return c.request(method, path, headers=headers, json=REQUEST if method == "POST" else None, **kw)


def assert_401(r: httpx.Response, challenge: str) -> None:
    assert r.status_code == 401, r.text
    assert r.headers["www-authenticate"] == challenge
    assert r.headers["content-type"].startswith("application/json")
    assert set(r.json()) == {"error"} and TOKEN not in r.text


@pytest.mark.parametrize("path", ["/v2/health/live", "/v2/health/ready"])
def test_probes_need_no_token(server, path):
    assert call(server, "GET", path).status_code == 200


@pytest.mark.parametrize("method,path", PROTECTED)
def test_no_token_is_401_with_a_bearer_challenge(server, method, path):
    assert_401(call(server, method, path), 'Bearer realm="convt-serve"')


@pytest.mark.parametrize("authorization", [f"Bearer {TOKEN[:-1]}", f"Bearer {TOKEN}x", f"Basic {TOKEN}", TOKEN,
                                           "Bearer", f"Bearer {TOKEN.upper()}", f"Bearer  {TOKEN} {TOKEN}",
                                           "Bearer \xe9".encode("latin-1")])
def test_wrong_token_is_401_invalid_token(server, authorization):
    assert_401(call(server, "POST", INFER, authorization),
               'Bearer realm="convt-serve", error="invalid_token"')


def test_two_authorization_headers_are_refused(server):
    with server.client() as c:
        r = c.get("/v2", headers=[("Authorization", f"Bearer {TOKEN}"), ("Authorization", "Bearer other")])
    assert r.status_code == 401


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
def test_the_token_opens_every_endpoint(server, scheme):
    auth = f"{scheme} {TOKEN}"
    r = call(server, "POST", INFER, auth)
    assert r.status_code == 200 and r.json()["outputs"][0]["shape"] == [1, 2, 11, 11], r.text
    for method, path in PROTECTED[:-1]:
        if method == "GET":
            assert call(server, method, path, auth).status_code == 200, path
    assert call(server, "GET", "/v3/unknown", auth).status_code == 404


def test_refusals_are_counted_and_the_token_is_nowhere(server):
    call(server, "GET", "/v2")
    metrics = call(server, "GET", "/metrics", f"Bearer {TOKEN}").text
    assert re.search(r'convt_requests_total\{endpoint="[^"]*",method="GET",status="401"\} [1-9]', metrics)
    assert TOKEN not in server.logs() and TOKEN not in metrics
    assert TOKEN not in call(server, "GET", "/health", f"Bearer {TOKEN}").text


def test_settings_never_show_the_token(monkeypatch):
    monkeypatch.setenv("CONVT_API_TOKEN", TOKEN)
    settings = parse([])
    assert settings.api_token.get_secret_value() == TOKEN
    assert TOKEN not in repr(settings) and TOKEN not in str(settings.model_dump())


@pytest.mark.parametrize("token", ["", "  ", "tok en", "t\u00f6ken"])
def test_a_bad_token_refuses_to_start(token):
    # fail closed: an empty variable (a secret that did not mount) must not mean "no auth"
    done = subprocess.run(server_command(), cwd=ROOT, env=_env({"CONVT_API_TOKEN": token}), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "CONVT_API_TOKEN" in done.stderr
