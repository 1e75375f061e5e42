"""What an exact undo rests on: a table's key and columns read from the catalog, and the
before- and after-images of the rows a change wrote, kept in the state store as JSON that
decodes to values equal to what the driver returned."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from bot.db.session import Session
from bot.sql.undo import TableName

Row = tuple[Any, ...]
_FLOATS = {"float", "double", "real"}  # never compared for equality: their literals round


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
class TableMeta:
    columns: tuple[str, ...]
    key: tuple[str, ...]
    generated: frozenset[str]
    floats: frozenset[str]
    auto_increment: bool  # the key is one auto-increment column
    reason: str

    @classmethod
    def refused(cls, reason: str) -> TableMeta:
        return cls((), (), frozenset(), frozenset(), False, reason)


async def table_meta(session: Session, schema: str, table: str, kind: str) -> TableMeta:
    """The key and columns of `schema.table`, or why an undo of a `kind` on it is not exact."""
    columns = await session.fetch(_COLUMNS, (schema, table), limit=10_000)
    if not columns.rows:
        return TableMeta.refused(f"the table {table} could not be found for an undo")
    names = tuple(str(row[0]) for row in columns.rows)
    generated = frozenset(str(r[0]) for r in columns.rows if "GENERATED" in str(r[2]).upper())
    floats = frozenset(str(r[0]) for r in columns.rows if str(r[1]).lower() in _FLOATS)
    auto = [str(r[0]) for r in columns.rows if "auto_increment" in str(r[2]).lower()]
    key = _pick_key((await session.fetch(_KEYS, (schema, table), limit=10_000)).rows)
    if not key:
        return TableMeta.refused(f"{table} has no primary or unique key")
    triggers = await session.fetch(_TRIGGERS, (schema, table), limit=1)
    if triggers.rows and int(triggers.rows[0][0]):
        return TableMeta.refused(f"triggers fire on {table}")
    if kind != "INSERT":
        cascades = await session.fetch(_CASCADES, (schema, table), limit=1)
        if cascades.rows and int(cascades.rows[0][0]):
            return TableMeta.refused(f"foreign keys cascade from {table}")
    return TableMeta(names, key, generated, floats, auto == list(key), "")


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
