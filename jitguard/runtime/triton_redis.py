"""A Redis backend for Triton's remote cache (`TRITON_REMOTE_CACHE_BACKEND`), for the Tritons whose own
does not start.

Triton 3.4 .. 3.9's `RedisRemoteCacheBackend` reads its settings from `knobs.cache.redis`, which those
versions do not have (the Redis knobs live at `knobs.redis`): constructing it raises AttributeError, so
every compile under Triton's `RemoteCacheManager` fails. This class keeps Triton's layout and settings
(`TRITON_REDIS_HOST`, `TRITON_REDIS_PORT`, `TRITON_REDIS_KEY_FORMAT`, each entry file under
`key_format.format(key=entry, filename=name)`), so servers using either class share one store.
Importing this module imports Triton.
"""

from __future__ import annotations

import os

from triton.runtime.cache import RemoteCacheBackend


class RedisEntryStore(RemoteCacheBackend):
    """One Triton cache entry's files in Redis, read and written the way Triton's remote manager asks."""

    def __init__(self, key: str) -> None:
        import redis

        self.entry = key
        self.key_format = os.environ.get("TRITON_REDIS_KEY_FORMAT", "triton:{key}:{filename}")
        self.client = redis.Redis(host=os.environ.get("TRITON_REDIS_HOST", "localhost"),
                                  port=int(os.environ.get("TRITON_REDIS_PORT", "6379")))

    def _redis_key(self, filename: str) -> str:
        return self.key_format.format(key=self.entry, filename=filename)

    def get(self, filenames: list[str]) -> dict[str, bytes]:
        found = self.client.mget([self._redis_key(name) for name in filenames])
        return {name: data.encode() if isinstance(data, str) else data
                for name, data in zip(filenames, found) if data is not None}

    def put(self, filename: str, data: bytes) -> None:
        self.client.set(self._redis_key(filename), data)
