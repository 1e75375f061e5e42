"""`audit.jsonl`: the audit log as JSON lines in the state directory, for log shipping.

A line that cannot be written (a full disk, a read-only or missing directory) is kept in
memory, in order, and written with the next line once the file takes it again (the next
audited statement, or /health asking: see `problem`). Meanwhile the bot keeps serving (each
line is also in the store's audit table) and says so: an error in the log when it starts,
/health answers 503 naming the journal and how many lines wait, and a line in the log when
they are caught up. A line partly written before the failure is not written twice.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

from bot.state.codec import Record, encode

log = logging.getLogger(__name__)

MAX_BACKLOG_BYTES = 16 * 1024 * 1024  # beyond, new lines are only in the store's table


class AuditJournal:
    """JSON lines appended to a file only its owner can read."""

    def __init__(self, path: Path, max_backlog_bytes: int = MAX_BACKLOG_BYTES) -> None:
        self.path = path
        self._max_backlog = max_backlog_bytes
        self._backlog = bytearray()  # not yet written, whole lines (or the rest of one)
        self._lines = 0  # lines (or their rests) in the backlog
        self._dropped = 0
        self._error: str | None = None
        self._lock = asyncio.Lock()

    async def append(self, entry: Record) -> None:
        """Write `entry` as a line, after any kept before it; never raises (see `problem`)."""
        line = (encode(entry) + "\n").encode("utf-8")
        async with self._lock:
            if self._backlog and len(self._backlog) + len(line) > self._max_backlog:
                self._dropped += 1
                log.error("audit journal backlog full: a line is only in the store's table")
            else:
                self._backlog += line
                self._lines += 1
            await self._write_backlog()

    async def problem(self) -> str | None:
        """Why lines wait (writing them again first), or None when the journal is whole."""
        async with self._lock:
            await self._write_backlog()
            if self._error is None:
                return None
            waiting = f"{self._lines} line(s) kept in memory until it can"
            dropped = f", {self._dropped} only in the store's table" if self._dropped else ""
            return (
                f"audit journal {self.path} cannot be written ({self._error}); {waiting}{dropped}"
            )

    async def close(self) -> None:
        """A last try; lines that still cannot be written are named in the log (the store's
        audit table has them)."""
        if await self.problem() is not None:
            log.error(
                "audit journal %s: %d line(s) not written before stopping; the store's audit "
                "table has them",
                self.path,
                self._lines,
            )

    async def _write_backlog(self) -> None:
        if not self._backlog:
            return
        data = bytes(self._backlog)
        written, error = await asyncio.to_thread(self._append, data)
        del self._backlog[:written]
        self._lines = data[written:].count(b"\n")
        if error is not None:
            if self._error is None:
                log.error(
                    "audit journal %s cannot be written (%s): lines are kept until it can, "
                    "and the store's audit table has them",
                    self.path,
                    error,
                )
            self._error = error
            return
        if self._error is not None:
            log.warning("audit journal %s is written again: the lines kept are in it", self.path)
        self._error = None

    def _append(self, data: bytes) -> tuple[int, str | None]:
        """(bytes written, None) or (bytes written before it failed, why)."""
        written = 0
        try:
            descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError as exc:
            return 0, exc.strerror or str(exc)
        try:
            while written < len(data):
                written += os.write(descriptor, data[written:])
        except OSError as exc:
            return written, exc.strerror or str(exc)
        finally:
            os.close(descriptor)
        return written, None
