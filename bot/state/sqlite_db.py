"""The embedded backend: one SQLite file in WAL mode, owned by one worker thread.

Every statement runs on that thread, so the event loop never waits on disk and each job
(a function of the connection) is atomic against every other job of this process; the
directory lock keeps other processes out. Jobs queued while the thread is busy (a burst's)
run together: one hop to the thread for all of them and one back per read or run of
consecutive writes, which share one transaction, each in a savepoint (one COMMIT instead of
one each).

A job that fails (disk full, a locked or damaged file) raises StateError with the cause,
marks the store unhealthy and leaves the worker alive; the connection is rolled back, or
reopened at the next job when it cannot be, so the store recovers by itself once the cause
is gone.

Checkpoints (copying the WAL back into the database file, with an fsync) run on a second
connection in a thread of their own, a passive one every second: left to SQLite, one would
run inside whichever commit crossed the threshold and stall every call queued behind it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from bot.observability import observe
from bot.state.errors import StateError, StateLocked
from bot.state.legacy import import_legacy

log = logging.getLogger(__name__)

T = TypeVar("T")
Job = Callable[[sqlite3.Connection], T]

STATE_FILE = "state.db"
LOCK_FILE = "dbagent.lock"
SCHEMA_VERSION = 2
CHECKPOINT_EVERY_S = 1.0

# Each table has the columns its queries filter and sort on, with an index for each such
# query; the record itself is JSON text in `data` (never pickle: reading cannot run code).
# A session's history is a row per message in `session_messages` (see sessions.py).
SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, status TEXT NOT NULL, updated_at REAL NOT NULL, data TEXT NOT NULL,
    version TEXT);
CREATE INDEX IF NOT EXISTS sessions_by_status ON sessions (status);
CREATE INDEX IF NOT EXISTS sessions_by_update ON sessions (updated_at);
CREATE TABLE IF NOT EXISTS session_messages (
    session_id TEXT NOT NULL, position INTEGER NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (session_id, position));
CREATE TABLE IF NOT EXISTS pending (
    id TEXT PRIMARY KEY, created_at REAL NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS pending_by_age ON pending (created_at);
CREATE TABLE IF NOT EXISTS questions (
    id TEXT PRIMARY KEY, created_at REAL NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS questions_by_age ON questions (created_at);
CREATE TABLE IF NOT EXISTS proposals (
    id TEXT PRIMARY KEY, created_at REAL NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS proposals_by_age ON proposals (created_at);
CREATE TABLE IF NOT EXISTS undo (
    id TEXT PRIMARY KEY, created_at REAL NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS undo_by_age ON undo (created_at);
CREATE TABLE IF NOT EXISTS requests (
    id TEXT PRIMARY KEY, created_at REAL NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS requests_by_age ON requests (created_at);
CREATE TABLE IF NOT EXISTS executions (
    id TEXT PRIMARY KEY, phase TEXT NOT NULL, started_at REAL NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS executions_by_phase ON executions (phase, started_at);
CREATE INDEX IF NOT EXISTS executions_by_start ON executions (started_at);
CREATE TABLE IF NOT EXISTS seen_events (key TEXT PRIMARY KEY, seen_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS seen_events_by_age ON seen_events (seen_at);
CREATE TABLE IF NOT EXISTS grants (
    id TEXT PRIMARY KEY, binding TEXT NOT NULL, scope TEXT NOT NULL,
    expires_at REAL NOT NULL, held INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS grants_by_binding ON grants (binding, expires_at);
CREATE INDEX IF NOT EXISTS grants_by_expiry ON grants (expires_at);
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, time REAL NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS audit_by_time ON audit (time);
CREATE TABLE IF NOT EXISTS posted (
    kind TEXT NOT NULL, id TEXT NOT NULL, session_id TEXT NOT NULL, posted_at REAL NOT NULL,
    data TEXT NOT NULL, PRIMARY KEY (kind, id));
CREATE INDEX IF NOT EXISTS posted_by_session ON posted (session_id, kind, posted_at);
CREATE INDEX IF NOT EXISTS posted_by_age ON posted (posted_at);
"""


def _private_file(path: Path) -> None:
    """Create `path` readable by its owner only, or narrow an existing one we own."""
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if os.fstat(descriptor).st_uid == os.geteuid():
            os.fchmod(descriptor, 0o600)
    finally:
        os.close(descriptor)


def private_directory(directory: Path) -> None:
    """Create the state directory for its owner only. An existing directory is left as the
    operator made it (it might be shared, like /tmp), with a warning when others can read it."""
    try:
        directory.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        mode = directory.stat().st_mode
        if not stat.S_ISDIR(mode):
            raise StateError(f"state directory {directory} is not a directory") from None
        if mode & 0o077:
            log.warning("state directory %s is open to other users (chmod 700 it)", directory)
    except OSError as exc:
        raise StateError(f"state directory {directory} cannot be created: {exc}") from None


class DirectoryLock:
    """An exclusive lock on the state directory, held while the process runs; the file
    holds the holder's pid, so a second process can say who is in the way."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_FILE
        self._descriptor: int | None = None

    def acquire(self) -> None:
        try:
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StateError(f"state lock {self.path} cannot be opened: {exc}") from None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(descriptor, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(descriptor)
            raise StateLocked(
                f"state directory {self.path.parent} is in use by another dbagent process "
                f"(pid {holder}); stop it, or set DBAGENT_STATE_URL=redis://… to run several"
            ) from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
        self._descriptor = descriptor

    def release(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)  # closing drops the flock
            self._descriptor = None


class Checkpointer:
    """Passive checkpoints in the background: they never block the worker's writes."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dbagent-checkpoint", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        connection: sqlite3.Connection | None = None
        while not self._stop.wait(CHECKPOINT_EVERY_S):
            try:
                if connection is None:
                    connection = sqlite3.connect(self._path, isolation_level=None)
                    connection.execute("PRAGMA busy_timeout = 0")
                connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            except sqlite3.Error as exc:
                # A full disk fails the checkpoint too; the WAL keeps the data meanwhile,
                # and the worker's own writes report the cause.
                log.debug("checkpoint of %s failed: %s", self._path, exc)
                if connection is not None:
                    with contextlib.suppress(sqlite3.Error):
                        connection.close()
                    connection = None
        if connection is not None:
            with contextlib.suppress(sqlite3.Error):
                connection.close()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)


# Columns added since the first schema: (table, column, its definition). A file written
# before has them added at open (NULL in the rows already there).
ADDED_COLUMNS = (("sessions", "version", "TEXT"),)


def _add_columns(connection: sqlite3.Connection) -> None:
    for table, column, definition in ADDED_COLUMNS:
        present = {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}
        if column not in present:
            connection.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")


class SqliteDb:
    """The connection, its worker thread, and the store's health."""

    def __init__(self, directory: Path, *, read_only: bool = False) -> None:
        self.directory = directory
        self.path = directory / STATE_FILE
        self.read_only = read_only
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dbagent-state")
        self._queue: list[_Call] = []
        self._queue_lock = threading.Lock()
        self._draining = False
        self._connection: sqlite3.Connection | None = None
        self._lock = DirectoryLock(directory)
        self._checkpointer: Checkpointer | None = None
        self.healthy = True
        self.last_error: str | None = None
        self.last_error_at: float | None = None

    @classmethod
    async def open(cls, directory: Path | str, *, read_only: bool = False) -> SqliteDb:
        """Open (and create) the store. `read_only` opens an existing one beside the
        process that serves, without its lock (for `python -m bot audit`)."""
        db = cls(Path(directory), read_only=read_only)
        try:
            await db._submit(db._open_sync)
        except BaseException:
            await db.close()
            raise
        return db

    def _open_sync(self) -> None:
        if self.read_only:
            if not self.path.exists():
                raise StateError(f"no state in {self.directory} (set DBAGENT_STATE_DIR)")
        else:
            private_directory(self.directory)
            self._lock.acquire()
            _private_file(self.path)
        self._connect()
        if not self.read_only:
            self._checkpointer = Checkpointer(self.path)
            self._checkpointer.start()

    def _connect(self) -> sqlite3.Connection:
        try:
            if self.read_only:
                connection = sqlite3.connect(
                    f"file:{self.path}?mode=ro", uri=True, isolation_level=None
                )
            else:
                connection = sqlite3.connect(self.path, isolation_level=None)
            try:
                # Only the header and the schema are read: start-up cost is flat in size.
                connection.execute("PRAGMA busy_timeout = 2000")
                if not self.read_only:
                    connection.execute("PRAGMA journal_mode = WAL")
                    connection.execute("PRAGMA synchronous = NORMAL")
                    connection.execute("PRAGMA wal_autocheckpoint = 0")  # see Checkpointer
                    (version,) = connection.execute("PRAGMA user_version").fetchone()
                    connection.executescript(SCHEMA)
                    _add_columns(connection)
                    if version == 0:  # a new file: bring in an earlier version's state
                        import_legacy(self.directory, connection)
                    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                else:
                    connection.execute("SELECT count(*) FROM sqlite_schema").fetchone()
            except BaseException:
                connection.close()
                raise
        except sqlite3.Error as exc:
            raise StateError(f"state file {self.path} cannot be opened: {exc}") from None
        self._connection = connection
        return connection

    async def _submit(self, function: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        try:
            future = loop.run_in_executor(self._executor, function, *args)
        except RuntimeError:  # the executor is shut down
            raise StateError(f"state store {self.path} is closed") from None
        return await future

    async def read(self, job: Job[T]) -> T:
        return await self._queued(job, writes=False)

    async def write(self, job: Job[T]) -> T:
        """Run `job` in one transaction: all of it is stored, or none of it. Writes queued
        together share one transaction, each in a savepoint of its own (see `_drain`)."""
        return await self._queued(job, writes=True)

    # -- the queue ------------------------------------------------------------------------
    # Calls go on a queue that the worker thread empties in one go: one hop to the thread for
    # all the calls that queued meanwhile (a burst's), not one each; one hop back per read
    # and per run of consecutive writes, which share one transaction (one COMMIT, its WAL
    # pages written once).
    async def _queued(self, job: Job[T], *, writes: bool) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._queue_lock:
            self._queue.append(_Call(job, writes, future))
            start, self._draining = not self._draining, True
        if start:
            try:
                self._executor.submit(self._drain, loop)
            except RuntimeError:  # the executor is shut down
                with self._queue_lock:
                    self._queue.clear()
                    self._draining = False
                raise StateError(f"state store {self.path} is closed") from None
        return await future

    def _drain(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the worker thread: run what is queued, in order, until the queue is empty."""
        while True:
            with self._queue_lock:
                if not self._queue:
                    self._draining = False
                    return
                calls = list(self._queue)
                self._queue.clear()
            start = 0
            while start < len(calls):
                end = start + 1
                while calls[start].writes and end < len(calls) and calls[end].writes:
                    end += 1
                # A call whose caller is gone (cancelled) before it ran is not run.
                batch = [call for call in calls[start:end] if not call.future.done()]
                start = end
                if not batch:
                    continue
                outcomes = self._settle(batch)
                settled = [(c, ok, v) for c, (ok, v) in zip(batch, outcomes, strict=True)]
                # Handed over as soon as they are stored: a call never waits for the
                # calls queued after it.
                with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                    loop.call_soon_threadsafe(_deliver, settled)

    def _settle(self, calls: list[_Call]) -> list[tuple[bool, Any]]:
        """Each call's outcome: (True, result) or (False, exception)."""
        if len(calls) > 1:
            together = self._together([call.job for call in calls])
            if together is not None:
                return together
        outcomes: list[tuple[bool, Any]] = []
        for call in calls:  # one at a time (alone, or after a shared transaction failed)
            try:
                outcomes.append((True, self._run(call.job, call.writes)))
            except BaseException as exc:
                outcomes.append((False, exc))
        return outcomes

    def _together(self, jobs: list[Job[Any]]) -> list[tuple[bool, Any]] | None:
        """Writes in one transaction, each in a savepoint: a job that raises is rolled back
        alone. None when the store itself fails (an sqlite3 error: disk full, a locked or
        damaged file): all of it is rolled back, and each job is then run alone, as it
        would have been, to get its own outcome."""
        connection = self._connection
        if self.read_only or connection is None:
            return None
        outcomes: list[tuple[bool, Any]] = []
        try:
            connection.execute("BEGIN IMMEDIATE")
            for job in jobs:
                connection.execute("SAVEPOINT job")
                try:
                    outcomes.append((True, job(connection)))
                except sqlite3.Error:
                    raise
                except BaseException as exc:
                    connection.execute("ROLLBACK TO job")
                    outcomes.append((False, exc))
                connection.execute("RELEASE job")
            connection.execute("COMMIT")
        except sqlite3.Error:
            self._roll_back(connection)
            return None
        if not self.healthy:
            log.warning("state store %s writes again", self.path)
            self.healthy = True
            self.last_error = None
        return outcomes

    def _run(self, job: Job[T], writes: bool) -> T:
        if self.read_only and writes:
            raise StateError(f"state file {self.path} is open read-only")
        connection = self._connection
        try:
            if connection is None:
                connection = self._connect()
        except StateError as exc:  # the file cannot be opened (again): the store is down
            raise self._failed(exc) from None
        try:
            if not writes:
                return job(connection)
            connection.execute("BEGIN IMMEDIATE")
            try:
                result = job(connection)
                connection.execute("COMMIT")
            except BaseException:
                self._roll_back(connection)
                raise
        except sqlite3.Error as exc:
            raise self._failed(exc) from None
        # A StateError from the job itself (a corrupt record) goes up as it is: the store
        # still works, so it stays healthy.
        if writes and not self.healthy:
            # Only a write proves the store can write again (a full disk still reads).
            log.warning("state store %s writes again", self.path)
            self.healthy = True
            self.last_error = None
        return result

    def _roll_back(self, connection: sqlite3.Connection) -> None:
        try:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
        except sqlite3.Error:
            # A connection that cannot roll back is reopened at the next job.
            with contextlib.suppress(sqlite3.Error):
                connection.close()
            self._connection = None

    def _failed(self, exc: Exception) -> StateError:
        observe.state_error("sqlite")
        message = str(exc)
        if not isinstance(exc, StateError):
            message = f"state file {self.path} cannot be written: {exc}"
            if "full" in str(exc):
                message += " (free some disk space; the bot retries by itself)"
        if self.healthy or message != self.last_error:
            log.error("state store failed: %s", message)
        self.healthy = False
        self.last_error = message
        self.last_error_at = time.time()
        return StateError(message)

    async def probe(self) -> str | None:
        """None when the store takes a write now, else why not. The write changes nothing
        (a probe row in and out again); it proves a store marked unhealthy well again."""
        if self.read_only:
            return None

        def in_and_out(connection: sqlite3.Connection) -> None:
            probe = ("health-probe", 0.0)
            connection.execute(
                "INSERT OR REPLACE INTO seen_events (key, seen_at) VALUES (?, ?)", probe
            )
            connection.execute("DELETE FROM seen_events WHERE key = ?", probe[:1])

        try:
            await self.write(in_and_out)
        except StateError as exc:
            return str(exc)
        return None

    async def close(self) -> None:
        def close_sync() -> None:
            if self._connection is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._connection.close()
                self._connection = None
            self._lock.release()

        if self._checkpointer is not None:
            await asyncio.to_thread(self._checkpointer.stop)
            self._checkpointer = None
        with contextlib.suppress(StateError):  # closed already
            await self._submit(close_sync)
        self._executor.shutdown(wait=True)


@dataclass(frozen=True, slots=True)
class _Call:
    job: Job[Any]
    writes: bool
    future: asyncio.Future[Any]


def _deliver(settled: list[tuple[_Call, bool, Any]]) -> None:
    """On the event loop: hand each call its outcome (unless its caller has gone)."""
    for call, ok, value in settled:
        if call.future.done():
            continue
        if ok:
            call.future.set_result(value)
        else:
            call.future.set_exception(value)
