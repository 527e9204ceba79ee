"""A dict that keeps at most ``limit`` entries, dropping the oldest: the request path's per-header caches
(data plane plans, response heads), where a client that never repeats a header must not grow memory."""

from __future__ import annotations

from typing import Hashable, TypeVar

V = TypeVar("V")


class Bounded(dict):
    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def put(self, key: Hashable, value: V) -> V:
        if len(self) >= self.limit:
            del self[next(iter(self))]  # the oldest: dicts keep insertion order
        self[key] = value
        return value
