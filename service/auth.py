"""Optional bearer-token auth (CONVT_API_TOKEN).

The health endpoints stay open: Kubernetes and Docker probe them without
credentials, and they say nothing beyond up/ready. Everything else, /metrics
and /health (which reruns the parity check: work a stranger must not trigger)
included, needs ``Authorization: Bearer <token>``. Prometheus sends one with
``authorization: {credentials: ...}`` in its scrape config.
"""

from __future__ import annotations

import hmac

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

OPEN_PATHS = frozenset({"/v2/health/live", "/v2/health/ready"})


def authorized(scope: Scope, token: bytes) -> bool:
    """Whether the request carries exactly one ``Authorization: Bearer <token>``."""
    given = [v for k, v in scope["headers"] if k == b"authorization"]
    if len(given) != 1:
        return False
    scheme, _, credentials = given[0].strip().partition(b" ")
    # compare_digest on bytes: constant time in the token's content, and any
    # byte value a client sends is comparable (str would raise on non-ASCII)
    return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), token)


class BearerAuthMiddleware:
    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or authorized(scope, self.token):
            await self.app(scope, receive, send)
            return
        given = any(k == b"authorization" for k, _ in scope["headers"])
        # RFC 6750 3.1: a request without credentials gets the bare challenge, a wrong token error="invalid_token"
        challenge = 'Bearer realm="convt-serve"' + (', error="invalid_token"' if given else "")
        message = ("the Authorization header is not 'Bearer <this server's token>'" if given else
                   "this server needs 'Authorization: Bearer <token>' (the token set in CONVT_API_TOKEN)")
        response = JSONResponse({"error": message}, status_code=401, headers={"WWW-Authenticate": challenge})
        await response(scope, receive, send)
