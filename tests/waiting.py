"""Waiting, in tests, for something only polling can see (a key in Redis, a row in a table)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


async def until(condition: Callable[[], Awaitable[object] | object], within_s: float = 10) -> None:
    """Until `condition()` is true (or what it awaits is); fails the test when it has not been
    within `within_s`."""
    deadline = time.monotonic() + within_s
    while True:
        value = condition()
        if await value if isinstance(value, Awaitable) else value:
            return
        assert time.monotonic() < deadline, "the condition never held"
        await asyncio.sleep(0.02)
