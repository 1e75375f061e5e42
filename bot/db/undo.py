"""Undo of an approved change: its before-image against the rows as they are now.

Each row the change wrote is read again by key (on the primary, read-only). A row that still
holds what the change left gets its inverse statement: UPDATE back the old values, INSERT
back a deleted row, DELETE an inserted one. A row changed since (or gone, or back) is a
conflict: shown, and skipped. Every inverse UPDATE and DELETE also names the values it
expects in its WHERE, so a row changed between this card and its approval is skipped then
too (0 rows), never overwritten.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.db.images import Row, TableImage
from bot.db.impact_types import RowCount, StatementImpact
from bot.sql import undo as sql_undo

if TYPE_CHECKING:
    from bot.db.database import Database
    from bot.db.session import Session

_INLINE_ROWS = 200


@dataclass(frozen=True, slots=True)
class UndoPlan:
    statements: tuple[StatementImpact, ...]  # the inverse statements, in the order to run
    conflicts: tuple[str, ...]  # rows skipped, and why

    @property
    def sql(self) -> str:
        return ";\n".join(statement.sql for statement in self.statements)


async def plan_undo(database: Database, images: Sequence[TableImage]) -> UndoPlan:
    """The inverse of a change made of `images` (in the order its statements ran)."""
    statements: list[StatementImpact] = []
    conflicts: list[str] = []
    async with database.primary_read_session() as session:
        for image in reversed(images):  # the last statement is put back first
            rows, current = await _current(session, image)
            if len(rows) > _INLINE_ROWS:  # thousands of rows take a while to write as SQL
                inverse = await asyncio.to_thread(_inverse, image, current, conflicts)
            else:
                inverse = _inverse(image, current, conflicts)
            statements.extend(inverse)
    return UndoPlan(tuple(statements), tuple(conflicts))


async def rows_took_the_change(database: Database, images: Sequence[TableImage]) -> bool | None:
    """After a stop during COMMIT: True when every row the change wrote holds what it wrote,
    False when every one still holds what it held before, None when the rows cannot tell
    (mixed, changed since, or a change that left a row as it was)."""
    votes: set[bool | None] = set()
    async with database.primary_read_session() as session:
        for image in images:
            _, current = await _current(session, image)
            votes |= _votes(image, current)
            if None in votes or len(votes) > 1:
                return None
    return votes.pop() if len(votes) == 1 else None


def _votes(image: TableImage, current: dict[Row, Row]) -> set[bool | None]:
    def same(row: Row | None, wanted: Row) -> bool:
        return row is not None and all(
            _value(image, row, c) == _value(image, wanted, c) for c in image.comparable
        )

    votes: set[bool | None] = set()
    if image.kind == "DELETE":
        for before in image.before:
            now = current.get(_key_of(image, before))
            votes.add(True if now is None else False if same(now, before) else None)
    elif image.kind == "INSERT":
        for after in image.after:
            now = current.get(_key_of(image, after))
            votes.add(False if now is None else True if same(now, after) else None)
    else:
        for before, after in zip(image.before, image.after, strict=True):
            if same(before, after):
                continue  # this row tells nothing: the change left it as it was
            now = current.get(_key_of(image, after))
            votes.add(True if same(now, after) else False if same(now, before) else None)
    return votes


async def _current(session: Session, image: TableImage) -> tuple[tuple[Row, ...], dict[Row, Row]]:
    """The rows an image is about, and those of them that exist now, by key."""
    rows = image.after if image.kind in ("UPDATE", "INSERT") else image.before
    keys = [_key_of(image, row) for row in rows]
    current: dict[Row, Row] = {}
    if keys:
        sql = sql_undo.rows_by_key(image.name, image.key, keys, lock=False, columns=image.columns)
        raw = await session.fetch(sql, limit=len(keys))
        columns = raw.columns or ()
        for found in raw.rows:
            row = _reordered(image.columns, columns, tuple(found))
            current[_key_of(image, row)] = row
    return rows, current


def _inverse(
    image: TableImage, current: dict[Row, Row], conflicts: list[str]
) -> list[StatementImpact]:
    name = image.table if image.schema is None else f"{image.schema}.{image.table}"
    if image.kind == "DELETE":
        back = []
        for row in image.before:
            key = _key_of(image, row)
            if key in current:
                conflicts.append(f"{name} {_shown(image, key)}: a row with this key exists again")
                continue
            back.append([_value(image, row, column) for column in image.writable])
        if not back:
            return []
        sql = sql_undo.insert_back(image.name, image.writable, back)
        return [_impact(sql, "INSERT", len(back), name)]
    statements = []
    for index, after in enumerate(image.after):
        key = _key_of(image, after)
        now = current.get(key)
        if now is None:
            conflicts.append(f"{name} {_shown(image, key)}: the row is gone")
            continue
        changed_since = [
            column
            for column in image.comparable
            if _value(image, now, column) != _value(image, after, column)
        ]
        if image.kind == "INSERT":
            if changed_since:
                conflicts.append(f"{name} {_shown(image, key)}: changed since ({changed_since[0]})")
                continue
            expected = [c for c in image.comparable if c not in image.key]
            sql = sql_undo.delete_inserted(
                image.name,
                image.key,
                key,
                expected,
                [_value(image, after, c) for c in expected],
            )
            statements.append(_impact(sql, "DELETE", 1, name))
            continue
        before = image.before[index]
        put_back = [
            column
            for column in image.writable
            if _value(image, before, column) != _value(image, after, column)
        ]
        if not put_back:
            continue  # the change left this row as it was
        touched = [c for c in changed_since if c in put_back]
        if touched:
            conflicts.append(f"{name} {_shown(image, key)}: changed since ({touched[0]})")
            continue
        sql = sql_undo.update_back(
            image.name,
            image.key,
            key,
            [(column, _value(image, before, column)) for column in put_back],
            [(c, _value(image, after, c)) for c in put_back if c in image.comparable],
        )
        statements.append(_impact(sql, "UPDATE", 1, name))
    return statements


def _impact(sql: str, kind: str, rows: int, table: str) -> StatementImpact:
    return StatementImpact(
        sql=sql,
        kind=kind,
        rows=rows,
        count=RowCount.EXACT,
        tables=(table,),
        undo=True,
        total=rows,
    )


def _position(columns: Sequence[str], name: str) -> int:
    return [c.lower() for c in columns].index(name.lower())


def _value(image: TableImage, row: Row, column: str) -> Any:
    return row[_position(image.columns, column)]


def _key_of(image: TableImage, row: Row) -> Row:
    return tuple(_value(image, row, column) for column in image.key)


def _reordered(wanted: Sequence[str], have: Sequence[str], row: Row) -> Row:
    """`row` (in `have` order) in the image's column order: the table may have changed."""
    lowered = [c.lower() for c in have]
    return tuple(row[lowered.index(c.lower())] if c.lower() in lowered else None for c in wanted)


def _shown(image: TableImage, key: Row) -> str:
    return ", ".join(f"{c} = {v!r}" for c, v in zip(image.key, key, strict=True))
