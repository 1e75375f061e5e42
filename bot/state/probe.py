"""Is the store usable now? Asked by /health, at most once a second.

A flag set by the last operation is not enough: an idle replica would say "healthy" while
Redis is down, and "unhealthy" long after it is back. So the store is asked (Redis: PING;
the embedded store: a write that changes nothing), and the state directory, which holds
the audit journal (and the embedded store), must take a small file.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

PROBE_EVERY_S = 1.0
PROBE_BYTES = 4096


def _write_probe_file(directory: Path) -> None:
    path = directory / f".probe-{uuid.uuid4().hex}"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(descriptor, b"\0" * PROBE_BYTES)
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
        path.unlink(missing_ok=True)


async def directory_problem(directory: Path) -> str | None:
    """None when `directory` takes a small file (written, synced, removed); else why not."""
    try:
        await asyncio.to_thread(_write_probe_file, directory)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return f"state directory {directory} cannot be written: {reason}"
    return None


class StoreProbe:
    """The answer of `ask` (None: usable; else why not), kept for `every_s`."""

    def __init__(
        self,
        ask: Callable[[], Awaitable[str | None]],
        every_s: float = PROBE_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ask = ask
        self._every_s = every_s
        self._clock = clock
        self._answer: tuple[float, str | None] | None = None
        self._asking: asyncio.Future[str | None] | None = None

    async def problem(self) -> str | None:
        if self._answer is not None and self._clock() - self._answer[0] < self._every_s:
            return self._answer[1]
        if self._asking is None:  # one probe at a time, however many ask
            self._asking = asyncio.ensure_future(self._ask())
        asking = self._asking
        try:
            answer = await asyncio.shield(asking)
        finally:
            if self._asking is asking and asking.done():
                self._asking = None
        self._answer = (self._clock(), answer)
        return answer
