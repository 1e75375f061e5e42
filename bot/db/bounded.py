"""Approved changes, bounded by what the approver saw: one transaction on one connection.

Every statement of the call runs inside `START TRANSACTION … COMMIT`. A statement that changes
more rows than its bound rolls the whole call back, and so does any failure: nothing is left
half done. Before an UPDATE or DELETE runs, the rows it will change are read with
`SELECT … FOR UPDATE` by its own WHERE (with the table's primary or unique key), and after
it runs, the rows it wrote are read back by key: the before- and after-images Undo needs. An
INSERT's rows are read back by key (the VALUES' literal keys, or LAST_INSERT_ID onwards for
an auto-increment key). `before_commit` is awaited just before COMMIT is sent: until then a
stopped bot leaves a transaction nobody will commit, which the server rolls back when the
connection closes.

DDL never runs here: MySQL/MariaDB commit it implicitly, so it cannot be bounded or undone.
"""

from __future__ import annotations

import contextlib
import datetime
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from bot.db.impact_types import Impact, RowCount
from bot.db.session import RawResult, Session
from bot.db.types import DbError, Execution, StatementOutcome
from bot.sql import undo as sql_undo
from bot.sql.undo import RowChange, TableName

if TYPE_CHECKING:
    from bot.db.database import Database

Row = tuple[Any, ...]
BeforeCommit = Callable[[], Awaitable[None]]
_FLOATS = {"float", "double", "real"}  # never compared for equality: their literals round


@dataclass(frozen=True, slots=True)
class WriteStep:
    sql: str
    max_rows: int | None  # None: not bounded (a read among the writes)
    change: RowChange | None  # None: nothing to capture (a read)


@dataclass(frozen=True, slots=True)
class TableImage:
    """What one statement changed, exactly enough to put it back."""

    kind: str  # UPDATE | DELETE | INSERT
    schema: str | None
    table: str
    columns: tuple[str, ...]  # every column, in SELECT * order
    key: tuple[str, ...]
    writable: tuple[str, ...]  # not generated: what an INSERT or UPDATE may set
    comparable: tuple[str, ...]  # compared exactly when checking for later changes
    before: tuple[Row, ...] = ()  # UPDATE, DELETE: the rows as they were
    after: tuple[Row, ...] = ()  # UPDATE, INSERT: the rows as the change left them

    @property
    def name(self) -> TableName:
        return TableName(self.schema, self.table)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "schema": self.schema,
            "table": self.table,
            "columns": list(self.columns),
            "key": list(self.key),
            "writable": list(self.writable),
            "comparable": list(self.comparable),
            "before": [[encode_value(v) for v in row] for row in self.before],
            "after": [[encode_value(v) for v in row] for row in self.after],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TableImage:
        return cls(
            kind=data["kind"],
            schema=data["schema"],
            table=data["table"],
            columns=tuple(data["columns"]),
            key=tuple(data["key"]),
            writable=tuple(data["writable"]),
            comparable=tuple(data["comparable"]),
            before=tuple(tuple(decode_value(v) for v in row) for row in data["before"]),
            after=tuple(tuple(decode_value(v) for v in row) for row in data["after"]),
        )


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


def bounds_for(
    impact: Impact | None,
    statements: Sequence[str],
    *,
    margin: int,
    unknown: int,
) -> tuple[int, ...]:
    """The most rows each statement may change: what its card stated plus the margin, and
    `unknown` where the card had no number (or no impact was computed)."""
    stated = {} if impact is None else {i: s for i, s in enumerate(impact.statements)}
    bounds = []
    for index, sql in enumerate(statements):
        statement = stated.get(index)
        if statement is None or statement.sql.strip() != sql.strip():
            bounds.append(unknown)  # the card did not state this statement
        elif statement.rows is None or statement.count is RowCount.UNKNOWN:
            bounds.append(unknown)
        else:
            bounds.append(statement.rows + margin)
    return tuple(bounds)


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
            for position, step in enumerate(steps, 1):
                await run.step(position, len(steps), step)
            await before_commit()
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
    reason = next(iter(run.reasons), "")
    return BoundedRun(
        Execution(database.config.name, tuple(run.outcomes)), tuple(run.images), reason
    )


class _Transaction:
    def __init__(self, session: Session, database: Database, max_undo_rows: int) -> None:
        self.session = session
        self.database = database
        self.cap = max_undo_rows
        self.outcomes: list[StatementOutcome] = []
        self.images: list[TableImage] = []
        self.reasons: list[str] = []
        self._schema: str | None = None

    async def fetch(self, sql: str, args: Any = None, limit: int = 1) -> RawResult:
        return await self.session.fetch(sql, args, limit=limit)

    async def rollback(self) -> None:
        if self.session.broken:
            return  # the connection is closed: the server rolls back on its own
        # Closing the connection without a COMMIT rolls back as well.
        with contextlib.suppress(DbError):
            await self.fetch("ROLLBACK")

    async def step(self, position: int, total: int, step: WriteStep) -> None:
        where = f"statement {position} of {total}: " if total > 1 else ""
        capture = await self._before(step.change, where)
        started = time.perf_counter()
        try:
            raw = await self.fetch(step.sql, limit=self.database.limits.max_rows)
        except DbError as exc:
            raise DbError(where + exc.message) from None
        self.outcomes.append(self.database.outcome(step.sql, raw, started))
        changed = raw.affected_rows or 0
        if step.max_rows is not None and changed > step.max_rows:
            raise RolledBack(
                f"rolled back: {where}changed {_rows(changed)}, approved {step.max_rows}; "
                "nothing was changed",
                tuple(self.outcomes),
            )
        if capture is not None:
            await self._after(step.change, capture, raw, where)

    # -- images ---------------------------------------------------------------------------
    async def _before(self, change: RowChange | None, where: str) -> _Capture | None:
        if change is None:
            return None
        if not change.exact or change.table is None:
            self.reasons.append(where + change.reason)
            return None
        meta = await self._meta(change)
        if meta.reason:
            self.reasons.append(where + meta.reason)
            return None
        if change.kind == "INSERT":
            return _Capture(meta, (), ())
        if change.kind == "UPDATE" and set(change.set_columns) & {k.lower() for k in meta.key}:
            self.reasons.append(where + "it changes the table's key")
            return None
        raw = await self.fetch(change.locking_read or "", limit=self.cap + 1)
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
        if change.kind == "DELETE":
            self._keep(change, meta, capture.columns, capture.before, ())
            return
        if change.kind == "UPDATE":
            if not capture.before:
                self._keep(change, meta, capture.columns, (), ())
                return
            positions = [_position(capture.columns, k) for k in meta.key]
            keys = [tuple(row[p] for p in positions) for row in capture.before]
            after = await self.fetch(
                sql_undo.rows_by_key(table, meta.key, keys, lock=True), limit=len(keys)
            )
            ordered = _by_key(after, meta.key, keys)
            if ordered is None:
                self.reasons.append(where + "its rows could not be read back by key")
                return
            self._keep(change, meta, capture.columns, capture.before, ordered)
            return
        inserted = raw.affected_rows or 0
        literal_keys = sql_undo.insert_keys(change, meta.columns, meta.key)
        if literal_keys is not None and len(literal_keys) == inserted:
            sql = sql_undo.rows_by_key(table, meta.key, literal_keys, lock=True, literal_keys=True)
        elif meta.auto_increment and raw.last_insert_id and inserted:
            step = await self._increment()
            first = raw.last_insert_id
            ids = [(first + n * step,) for n in range(inserted)]
            sql = sql_undo.rows_by_key(table, meta.key, ids, lock=True)
        else:
            self.reasons.append(where + "the keys of the inserted rows are not known")
            return
        if inserted > self.cap:
            self.reasons.append(where + f"it inserts more than {_rows(self.cap)} (the undo limit)")
            return
        rows = await self.fetch(sql, limit=max(inserted, 1))
        if len(rows.rows) != inserted:
            self.reasons.append(where + "the inserted rows could not be read back by key")
            return
        self._keep(change, meta, rows.columns or (), (), tuple(tuple(r) for r in rows.rows))

    def _keep(
        self,
        change: RowChange,
        meta: _Meta,
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

    async def _meta(self, change: RowChange) -> _Meta:
        assert change.table is not None
        schema = change.table.schema or await self._current_schema()
        table = change.table.name
        columns = await self.fetch(_COLUMNS, (schema, table), limit=10_000)
        if not columns.rows:
            return _Meta.refused(f"the table {table} could not be found for an undo")
        names = tuple(str(row[0]) for row in columns.rows)
        generated = frozenset(str(r[0]) for r in columns.rows if "GENERATED" in str(r[2]).upper())
        floats = frozenset(str(r[0]) for r in columns.rows if str(r[1]).lower() in _FLOATS)
        auto = [str(r[0]) for r in columns.rows if "auto_increment" in str(r[2]).lower()]
        key = _pick_key((await self.fetch(_KEYS, (schema, table), limit=10_000)).rows)
        if not key:
            return _Meta.refused(f"{table} has no primary or unique key")
        triggers = await self.fetch(_TRIGGERS, (schema, table))
        if triggers.rows and int(triggers.rows[0][0]):
            return _Meta.refused(f"triggers fire on {table}")
        if change.kind != "INSERT":
            cascades = await self.fetch(_CASCADES, (schema, table))
            if cascades.rows and int(cascades.rows[0][0]):
                return _Meta.refused(f"foreign keys cascade from {table}")
        return _Meta(names, key, generated, floats, auto == list(key), "")

    async def _current_schema(self) -> str:
        if self._schema is None:
            raw = await self.fetch("SELECT DATABASE()")
            self._schema = str(raw.rows[0][0] or "")
        return self._schema


@dataclass(frozen=True, slots=True)
class _Meta:
    columns: tuple[str, ...]
    key: tuple[str, ...]
    generated: frozenset[str]
    floats: frozenset[str]
    auto_increment: bool  # the key is one auto-increment column
    reason: str

    @classmethod
    def refused(cls, reason: str) -> _Meta:
        return cls((), (), frozenset(), frozenset(), False, reason)


@dataclass(frozen=True, slots=True)
class _Capture:
    meta: _Meta
    columns: tuple[str, ...]
    before: tuple[Row, ...]


_COLUMNS = (
    "SELECT COLUMN_NAME, DATA_TYPE, EXTRA FROM information_schema.COLUMNS "
    "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION"
)
_KEYS = (
    "SELECT INDEX_NAME, COLUMN_NAME, NULLABLE FROM information_schema.STATISTICS "
    "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND NON_UNIQUE = 0 "
    "ORDER BY INDEX_NAME <> 'PRIMARY', INDEX_NAME, SEQ_IN_INDEX"
)
_TRIGGERS = (
    "SELECT COUNT(*) FROM information_schema.TRIGGERS "
    "WHERE EVENT_OBJECT_SCHEMA = %s AND EVENT_OBJECT_TABLE = %s"
)
_CASCADES = (
    "SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS "
    "WHERE UNIQUE_CONSTRAINT_SCHEMA = %s AND REFERENCED_TABLE_NAME = %s "
    "AND (DELETE_RULE NOT IN ('RESTRICT', 'NO ACTION') "
    "OR UPDATE_RULE NOT IN ('RESTRICT', 'NO ACTION'))"
)


def _pick_key(rows: Sequence[Row]) -> tuple[str, ...]:
    """The primary key, else the first unique key whose columns are all NOT NULL (a unique
    key with a NULL column does not identify a row)."""
    indexes: dict[str, list[tuple[str, bool]]] = {}
    for index, column, nullable in rows:
        indexes.setdefault(str(index), []).append((str(column), str(nullable or "") == "YES"))
    for columns in indexes.values():  # ordered: PRIMARY first
        if not any(nullable for _, nullable in columns):
            return tuple(column for column, _ in columns)
    return ()


def _position(columns: Sequence[str], name: str) -> int:
    lowered = [c.lower() for c in columns]
    return lowered.index(name.lower())


def _by_key(raw: RawResult, key: Sequence[str], keys: Sequence[Row]) -> tuple[Row, ...] | None:
    """`raw`'s rows in the order of `keys`; None unless every key is there exactly once."""
    columns = raw.columns or ()
    positions = [_position(columns, k) for k in key]
    found = {tuple(row[p] for p in positions): tuple(row) for row in raw.rows}
    if len(found) != len(keys) or len(raw.rows) != len(keys):
        return None
    try:
        return tuple(found[tuple(k)] for k in keys)
    except KeyError:
        return None


def _rows(count: int) -> str:
    return f"{count} row{'' if count == 1 else 's'}"


# -- values in the state store ---------------------------------------------------------------
def encode_value(value: Any) -> Any:
    """A driver value as JSON that decodes to an equal value."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return {"$": "float", "v": repr(value)}
    if isinstance(value, Decimal):
        return {"$": "decimal", "v": str(value)}
    if isinstance(value, bytes | bytearray):
        return {"$": "bytes", "v": bytes(value).hex()}
    if isinstance(value, datetime.datetime):
        return {"$": "datetime", "v": value.isoformat()}
    if isinstance(value, datetime.date):
        return {"$": "date", "v": value.isoformat()}
    if isinstance(value, datetime.time):
        return {"$": "time", "v": value.isoformat()}
    if isinstance(value, datetime.timedelta):
        return {"$": "timedelta", "v": value // datetime.timedelta(microseconds=1)}
    if isinstance(value, set | frozenset):
        return {"$": "set", "v": ",".join(sorted(str(v) for v in value))}
    return {"$": "str", "v": str(value)}


def decode_value(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    tag, raw = value["$"], value["v"]
    decoders: dict[str, Callable[[Any], Any]] = {
        "float": float,
        "decimal": Decimal,
        "bytes": bytes.fromhex,
        "datetime": datetime.datetime.fromisoformat,
        "date": datetime.date.fromisoformat,
        "time": datetime.time.fromisoformat,
        "timedelta": lambda micros: datetime.timedelta(microseconds=micros),
        "set": str,
        "str": str,
    }
    return decoders[tag](raw)
