"""The state store: sessions, pending approvals, grants, audit records and seen events.

One SQLite file (sqlitedict), one table per kind, values encoded as JSON — never pickle, so a
state file cannot run code when it is read. Every operation runs on one dedicated worker
thread: the event loop never blocks on disk, and a read-modify-write done in one `transact`
call is atomic with respect to every other store operation.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from sqlitedict import SqliteDict

T = TypeVar("T")

TABLES = (
    "sessions",
    "pending",
    "questions",
    "grants",
    "audit",
    "seen_events",
    "answers",
    "executions",
    "undo",
)
STATE_FILE = "dbagent.sqlite"


class StateError(Exception):
    """The state file is missing a piece, corrupt or unreadable; the message names the file."""


def _encode(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Table:
    """A synchronous view of one table, used only on the store's worker thread."""

    def __init__(self, store_path: Path, name: str, backing: SqliteDict) -> None:
        self._path = store_path
        self.name = name
        self._backing = backing

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self._backing[key]
        except KeyError:
            return default
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise StateError(
                f"state file {self._path} is corrupt: table {self.name}, key {key!r}: {exc}"
            ) from None

    def __contains__(self, key: str) -> bool:
        return key in self._backing

    def __setitem__(self, key: str, value: Any) -> None:
        self._backing[key] = value

    def pop(self, key: str, default: Any = None) -> Any:
        value = self.get(key, default)
        if key in self._backing:
            del self._backing[key]
        return value

    def keys(self) -> Iterator[str]:
        return iter(list(self._backing.keys()))

    def items(self) -> Iterator[tuple[str, Any]]:
        for key in self.keys():
            yield key, self.get(key)

    def __len__(self) -> int:
        return len(self._backing)

    def commit(self) -> None:
        self._backing.commit()


class StateStore:
    """Async facade; `open()` it before use and `close()` it when done."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        self.path = self.directory / STATE_FILE
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dbagent-state")
        self._tables: dict[str, Table] = {}
        self._lock = threading.Lock()

    @classmethod
    async def open(cls, directory: Path | str) -> StateStore:
        store = cls(directory)
        await store._run(store._open_sync)
        return store

    def _open_sync(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StateError(f"state directory {self.directory} cannot be created: {exc}") from None
        if self.path.exists():
            self._check_readable()
        for name in TABLES:
            try:
                backing = SqliteDict(
                    str(self.path),
                    tablename=name,
                    autocommit=False,
                    encode=_encode,
                    decode=json.loads,
                    outer_stack=False,
                    journal_mode="WAL",
                )
            except Exception as exc:  # sqlitedict wraps sqlite errors in several types
                raise StateError(f"state file {self.path} cannot be opened: {exc}") from None
            self._tables[name] = Table(self.path, name, backing)

    def _check_readable(self) -> None:
        try:
            connection = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            try:
                result = connection.execute("PRAGMA quick_check").fetchone()
            finally:
                connection.close()
        except sqlite3.Error as exc:
            raise StateError(f"state file {self.path} is unreadable: {exc}") from None
        if not result or result[0] != "ok":
            raise StateError(f"state file {self.path} is corrupt: {result and result[0]}")

    async def _run(self, function: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, function, *args)

    def _table(self, name: str) -> Table:
        if name not in self._tables:
            raise StateError(f"state file {self.path} has no table {name!r}")
        return self._tables[name]

    async def transact(self, table: str, function: Callable[[Table], T]) -> T:
        """Run `function(table)` on the worker thread and commit: atomic against every other
        store call, since there is only one worker."""

        def work() -> T:
            handle = self._table(table)
            try:
                result = function(handle)
            except sqlite3.DatabaseError as exc:
                raise StateError(f"state file {self.path} is unreadable: {exc}") from None
            handle.commit()
            return result

        return await self._run(work)

    async def get(self, table: str, key: str, default: Any = None) -> Any:
        return await self.transact(table, lambda t: t.get(key, default))

    async def put(self, table: str, key: str, value: Any) -> None:
        def write(t: Table) -> None:
            t[key] = value

        await self.transact(table, write)

    async def delete(self, table: str, key: str) -> Any:
        return await self.transact(table, lambda t: t.pop(key))

    async def items(self, table: str) -> list[tuple[str, Any]]:
        return await self.transact(table, lambda t: list(t.items()))

    async def add_if_absent(self, table: str, key: str, value: Any) -> bool:
        """Store `value` unless the key exists; True when this call stored it (dedupe)."""

        def work(t: Table) -> bool:
            if key in t:
                return False
            t[key] = value
            return True

        return await self.transact(table, work)

    async def close(self) -> None:
        def close_all() -> None:
            for table in self._tables.values():
                table._backing.close()
            self._tables.clear()

        if self._tables:
            await self._run(close_all)
        self._executor.shutdown(wait=True)
