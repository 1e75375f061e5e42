"""Redis keys under one prefix, for tests and benchmarks that share the server."""

from __future__ import annotations

import redis.asyncio as redis


async def forget_keys(redis_url: str, prefix: str) -> None:
    """Delete what one run wrote: the keys under its own prefix, nothing else."""
    client = redis.Redis.from_url(redis_url)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}*", count=1000)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()
