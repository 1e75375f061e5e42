"""Approved changes, bounded by what the approver saw: one transaction on one connection.

Every statement of the call runs inside `START TRANSACTION … COMMIT`. A statement that writes
more rows than its bound rolls the whole call back, and so does any failure: nothing is left
half done. What a statement writes is what the server says: the session's `Handler_write`,
`Handler_update` and `Handler_delete` before and after it (the statement, its triggers, the
stored functions it runs), plus the child rows its foreign keys cascade to, counted just before
it runs (InnoDB's cascades are invisible to those counters; bot.db.counting). Before an UPDATE
or DELETE runs, the rows it will change are read with `SELECT … FOR UPDATE` by its own WHERE
(with the table's primary or unique key), and after it runs, the rows it wrote are read back by
key: the before- and after-images Undo needs. An INSERT's rows are read back by key (the
VALUES' literal keys, or LAST_INSERT_ID onwards for an auto-increment key). `before_commit` is
awaited just before COMMIT is sent: until then a stopped bot leaves a transaction nobody will
commit, which the server rolls back when the connection closes. It gets the images, so they are
stored before COMMIT: after a stop in the COMMIT round trip, the rows tell whether it arrived.

DDL never runs here: MySQL/MariaDB commit it implicitly, so it cannot be bounded or undone.
"""

from __future__ import annotations

import asyncio
import contextlib
import operator
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.changes.bounds import over_bound, server_records
from bot.changes.undo_rules import undo_refusal
from bot.db.images import Row, TableImage, TableMeta, table_meta
from bot.db.session import RawResult, Session
from bot.db.types import DbError, Execution, StatementOutcome
from bot.sql import undo as sql_undo
from bot.sql.undo import RowChange, TableName

if TYPE_CHECKING:
    from bot.db.database import Database

BeforeCommit = Callable[["BoundedRun"], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class WriteStep:
    sql: str
    # The most rows the server may write for it in all (the statement, its triggers, its
    # cascades, the stored functions it runs); None: not bounded (a read among the writes).
    max_rows: int | None
    change: RowChange | None  # None: nothing to capture (a read)
    # Counts of the child rows its foreign keys cascade to, locking them (bot.sql.cascades):
    # the server's session counters do not see what InnoDB cascades.
    cascades: tuple[str, ...] = ()
    functions: tuple[str, ...] = ()  # stored programs it runs that write rows
    kind: str = ""  # the classifier's: INSERT, REPLACE, UPDATE, DELETE, CALL, …


@dataclass(frozen=True, slots=True)
class BoundedRun:
    execution: Execution
    images: tuple[TableImage, ...]
    undo_reason: str  # empty when the images undo the whole call exactly


class RolledBack(DbError):
    """The call was rolled back; nothing it did remains. `outcomes` are the statements that
    had run inside the transaction before it was rolled back."""


class CommitUnknown(DbError):
    """COMMIT was sent and no answer came back: the change may or may not be applied."""


async def run_bounded(
    database: Database,
    steps: Sequence[WriteStep],
    *,
    max_undo_rows: int,
    before_commit: BeforeCommit,
) -> BoundedRun:
    async with database.write_session() as session:
        run = _Transaction(session, database, max_undo_rows)
        await run.fetch("START TRANSACTION")
        try:
            if any(step.max_rows is not None for step in steps):
                run.counters = await run.handler_counts()
            for position, step in enumerate(steps, 1):
                await run.step(position, len(steps), step)
            await before_commit(run.result())
        except BaseException as exc:
            await run.rollback()
            if isinstance(exc, DbError) and not isinstance(exc, RolledBack):
                text = f"rolled back, nothing was changed: {exc.message}"
                raise RolledBack(text, tuple(run.outcomes)) from None
            raise
        try:
            await run.fetch("COMMIT")
        except DbError as exc:
            raise CommitUnknown(
                f"COMMIT did not answer ({exc.message}): the change may or may not be applied",
                tuple(run.outcomes),
            ) from None
    return run.result()


class _Transaction:
    def __init__(self, session: Session, database: Database, max_undo_rows: int) -> None:
        self.session = session
        self.database = database
        self.cap = max_undo_rows
        self.outcomes: list[StatementOutcome] = []
        self.images: list[TableImage] = []
        self.reasons: list[str] = []
        self._schema: str | None = None
        self.counters = 0  # the session's Handler_* total after the last bounded statement

    async def fetch(self, sql: str, args: Any = None, limit: int = 1) -> RawResult:
        return await self.session.fetch(sql, args, limit=limit)

    def result(self) -> BoundedRun:
        execution = Execution(self.database.config.name, tuple(self.outcomes))
        return BoundedRun(execution, tuple(self.images), next(iter(self.reasons), ""))

    async def rollback(self) -> None:
        if self.session.broken:
            return  # the connection is closed: the server rolls back on its own
        # Closing the connection without a COMMIT rolls back as well.
        with contextlib.suppress(DbError):
            await self.fetch("ROLLBACK")

    async def handler_counts(self) -> int:
        """The rows this session's statements, their triggers and the stored functions they
        ran have written so far (InnoDB's cascades are not in it)."""
        raw = await self.fetch(_HANDLERS, limit=len(_HANDLER_NAMES))
        return sum(int(value) for _, value in raw.rows)

    async def step(self, position: int, total: int, step: WriteStep) -> None:
        where = f"statement {position} of {total}: " if total > 1 else ""
        capture = await self._before(step, where)
        cascaded = 0
        for counting in step.cascades:  # before it runs: afterwards the rows are gone
            counted = await self.fetch(counting)
            cascaded += int(counted.rows[0][0]) if counted.rows else 0
        started = time.perf_counter()
        try:
            raw = await self.fetch(step.sql, limit=self.database.limits.max_rows)
        except DbError as exc:
            raise DbError(where + exc.message) from None
        self.outcomes.append(self.database.outcome(step.sql, raw, started))
        if step.max_rows is not None:
            counters = await self.handler_counts()
            upsert = _upsert(step)
            written = counters - self.counters + cascaded - (_attempts(raw) if upsert else 0)
            self.counters = counters
            problem = over_bound(raw, written, step.max_rows, upsert=upsert)
            if problem:
                raise RolledBack(
                    f"rolled back: {where}{problem}; nothing was changed", tuple(self.outcomes)
                )
        if capture is not None:
            await self._after(step.change, capture, raw, where)

    # -- images ---------------------------------------------------------------------------
    async def _before(self, step: WriteStep, where: str) -> _Capture | None:
        change = step.change
        if change is None:
            return None
        meta = None
        if change.exact and change.table is not None:
            schema = change.table.schema or await self._current_schema()
            meta = await table_meta(self.session, schema, change.table.name, change.kind)
        # The rules the card was decided by (bot.changes.undo_rules), on the table as it is now.
        reason = undo_refusal(change, meta, functions=step.functions, max_undo_rows=self.cap)
        if reason or meta is None:
            self.reasons.append(where + (reason or "its table could not be read"))
            return None
        if change.kind == "INSERT":
            return _Capture(meta, (), ())
        # Every column by name: SELECT * leaves out INVISIBLE columns.
        locking_read = sql_undo.naming_columns(change.locking_read or "", meta.columns)
        raw = await self.fetch(locking_read, limit=self.cap + 1)
        if len(raw.rows) > self.cap:
            self.reasons.append(where + f"it changes more than {_rows(self.cap)} (the undo limit)")
            return None
        columns = raw.columns or ()
        return _Capture(meta, columns, tuple(tuple(row) for row in raw.rows))

    async def _after(
        self, change: RowChange | None, capture: _Capture, raw: RawResult, where: str
    ) -> None:
        assert change is not None and change.table is not None
        meta, table = capture.meta, change.table
        changed = raw.affected_rows or 0
        # The images must account for every row the server says changed: a LIMIT without
        # ORDER BY, say, may pick other rows than the locking read did.
        unaccounted = where + "the rows it changed are not the rows read before it ran"
        if change.kind == "DELETE":
            if changed != len(capture.before):
                self.reasons.append(unaccounted)
                return
            # Equal counts are not the same rows (RAND(), a LIMIT without ORDER BY): the
            # rows read before must be the ones gone.
            if capture.before and await self._still_there(table, meta, capture):
                self.reasons.append(unaccounted)
                return
            self._keep(change, meta, capture.columns, capture.before, ())
            return
        if change.kind == "UPDATE":
            if not capture.before:
                if changed:
                    self.reasons.append(unaccounted)
                    return
                self._keep(change, meta, capture.columns, (), ())
                return
            keys = list(map(_key_of(capture.columns, meta.key), capture.before))
            after = await self.fetch(
                await _rows_by_key(table, meta.key, keys, columns=meta.columns), limit=len(keys)
            )
            ordered = _by_key(after, meta.key, keys)
            if ordered is None:
                self.reasons.append(where + "its rows could not be read back by key")
                return
            if changed != sum(b != a for b, a in zip(capture.before, ordered, strict=True)):
                self.reasons.append(unaccounted)
                return
            self._keep(change, meta, capture.columns, capture.before, ordered)
            return
        inserted = raw.affected_rows or 0
        if inserted > self.cap:
            self.reasons.append(where + f"it inserts more than {_rows(self.cap)} (the undo limit)")
            return
        literal_keys = sql_undo.insert_keys(change, meta.columns, meta.key)
        if literal_keys is not None and len(literal_keys) == inserted:
            sql = await _rows_by_key(
                table, meta.key, literal_keys, literal_keys=True, columns=meta.columns
            )
        elif meta.auto_increment and raw.last_insert_id and inserted:
            step = await self._increment()
            first = raw.last_insert_id
            ids = [(first + n * step,) for n in range(inserted)]
            sql = await _rows_by_key(table, meta.key, ids, columns=meta.columns)
        else:
            self.reasons.append(where + "the keys of the inserted rows are not known")
            return
        rows = await self.fetch(sql, limit=max(inserted, 1))
        if len(rows.rows) != inserted:
            self.reasons.append(where + "the inserted rows could not be read back by key")
            return
        self._keep(change, meta, rows.columns or (), (), tuple(tuple(r) for r in rows.rows))

    async def _still_there(self, table: TableName, meta: TableMeta, capture: _Capture) -> bool:
        keys = list(map(_key_of(capture.columns, meta.key), capture.before))
        left = await self.fetch(await _rows_by_key(table, meta.key, keys), limit=1)
        return bool(left.rows)

    def _keep(
        self,
        change: RowChange,
        meta: TableMeta,
        columns: Sequence[str],
        before: Sequence[Row],
        after: Sequence[Row],
    ) -> None:
        assert change.table is not None
        self.images.append(
            TableImage(
                kind=change.kind,
                schema=change.table.schema,
                table=change.table.name,
                columns=tuple(columns) or meta.columns,
                key=meta.key,
                writable=tuple(c for c in meta.columns if c not in meta.generated),
                comparable=tuple(c for c in meta.columns if c not in meta.floats),
                before=tuple(before),
                after=tuple(after),
            )
        )

    async def _increment(self) -> int:
        raw = await self.fetch("SELECT @@auto_increment_increment")
        return int(raw.rows[0][0])

    async def _current_schema(self) -> str:
        if self._schema is None:
            raw = await self.fetch("SELECT DATABASE()")
            self._schema = str(raw.rows[0][0] or "")
        return self._schema


@dataclass(frozen=True, slots=True)
class _Capture:
    meta: TableMeta
    columns: tuple[str, ...]
    before: tuple[Row, ...]


# Keys are written in slices of this many, yielding to the event loop between slices: each
# slice takes about a millisecond at most, and no worker thread contends for the GIL.
_KEYS_PER_SLICE = 2_000


async def _rows_by_key(
    table: TableName,
    key: Sequence[str],
    keys: Sequence[Any],
    *,
    literal_keys: bool = False,
    columns: Sequence[str] = (),
) -> str:
    """The locking read of rows by key (the rows a change wrote), every column by name."""
    slices = []
    for start in range(0, len(keys), _KEYS_PER_SLICE):
        if start:
            await asyncio.sleep(0)
        part = keys[start : start + _KEYS_PER_SLICE]
        slices.append(sql_undo.key_list_sql(key, part, literal_keys))
    return sql_undo.rows_in_key_list(table, key, ", ".join(slices), lock=True, columns=columns)


def _position(columns: Sequence[str], name: str) -> int:
    lowered = [c.lower() for c in columns]
    return lowered.index(name.lower())


def _key_of(columns: Sequence[str], key: Sequence[str]) -> Callable[[Row], Row]:
    """A row's key values, as a tuple (C-level: it runs for every row of a large change)."""
    positions = [_position(columns, k) for k in key]
    if len(positions) == 1:
        return operator.itemgetter(slice(positions[0], positions[0] + 1))
    return operator.itemgetter(*positions)


def _by_key(raw: RawResult, key: Sequence[str], keys: Sequence[Row]) -> tuple[Row, ...] | None:
    """`raw`'s rows in the order of `keys`; None unless every key is there exactly once."""
    if len(raw.rows) != len(keys):
        return None
    rows = list(map(tuple, raw.rows))
    found = dict(zip(map(_key_of(raw.columns or (), key), rows), rows, strict=True))
    if len(found) != len(keys):
        return None
    try:
        return tuple(map(found.__getitem__, keys))
    except KeyError:
        return None


def _rows(count: int) -> str:
    return f"{count} row{'' if count == 1 else 's'}"


# The server's session counters of rows written: by the statement, its triggers and the
# stored functions it runs (not InnoDB's cascades, not internal temporary tables).
_HANDLER_NAMES = ("Handler_delete", "Handler_update", "Handler_write")
_HANDLERS = (
    "SHOW SESSION STATUS WHERE Variable_name IN ("
    + ", ".join(f"'{name}'" for name in _HANDLER_NAMES)
    + ")"
)


def _upsert(step: WriteStep) -> bool:
    return step.kind in ("INSERT", "REPLACE")


def _attempts(raw: RawResult) -> int:
    """Insert attempts the server counted in Handler_write that wrote no row: a duplicate
    an INSERT IGNORE skipped, or that ON DUPLICATE KEY UPDATE or REPLACE turned into an
    update or a replacement (each counted as such on its own)."""
    records = server_records(raw)
    if records is not None:
        return records[1]
    # One row and no info: ON DUPLICATE KEY UPDATE or REPLACE reports an update as 2.
    return 1 if raw.affected_rows == 2 else 0
