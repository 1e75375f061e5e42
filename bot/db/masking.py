"""Masked columns in the data layer: what the server holds (columns, comments, view
definitions) as `SchemaFacts`, and masks applied to what leaves: result sets, the preview
of a change's rows, server error messages.

The facts are read once per database and kept `FACTS_TTL_S` (a column comment or a view
changed on the server is seen within that), then judged by bot.sql.masking. When no column
of the database is masked, nothing is read again until the snapshot expires and nothing is
masked or refused.
"""

from __future__ import annotations

import asyncio
import re
import time
import weakref
from dataclasses import replace

from bot.db.database import Database
from bot.db.impact_types import Impact, StatementImpact
from bot.db.roles import current_role
from bot.db.types import DbError, ResultSet
from bot.sql.masking import (
    COMMENT_MARKER,
    MASK,
    Masker,
    MaskPlan,
    MaskRules,
    SchemaFacts,
    TableFacts,
)

FACTS_TTL_S = 5.0
MAX_COLUMNS = 200_000
# Building the masker for a large schema is CPU work: above this many columns, off the loop.
_INLINE_COLUMNS = 5_000


class MaskedResult(DbError):
    """A result that cannot be masked as planned (its width is not what was traced)."""


# Per database and role: a role sees only the part of the catalog it may read.
_maskers: weakref.WeakKeyDictionary[Database, dict[str | None, tuple[float, Masker]]] = (
    weakref.WeakKeyDictionary()
)
_locks: weakref.WeakKeyDictionary[Database, asyncio.Lock] = weakref.WeakKeyDictionary()


async def masker(db: Database, *, max_age_s: float = FACTS_TTL_S) -> Masker:
    """The masker of `db`'s current schema snapshot (as the acting role sees it) and
    configured rules."""
    by_role = _maskers.setdefault(db, {})
    role = current_role()
    cached = by_role.get(role)
    if cached is not None and time.monotonic() - cached[0] < max_age_s:
        return cached[1]
    lock = _locks.setdefault(db, asyncio.Lock())
    async with lock:
        cached = by_role.get(role)
        if cached is not None and time.monotonic() - cached[0] < max_age_s:
            return cached[1]
        facts, columns = await _read_facts(db)
        rules = MaskRules(tuple(db.config.masked_columns))
        if columns > _INLINE_COLUMNS:
            built = await asyncio.to_thread(Masker, facts, rules)
        else:
            built = Masker(facts, rules)
        by_role[role] = (time.monotonic(), built)
        return built


async def _read_facts(db: Database) -> tuple[SchemaFacts, int]:
    async with db.catalog_reads() as session:
        schema = db.config.schema_name
        if not schema:
            raw = await session.fetch("SELECT DATABASE()", limit=1)
            schema = str(raw.rows[0][0]) if raw.rows and raw.rows[0][0] else ""
        schemas = [schema, *db.config.read_schemas]
        marks = ", ".join(["%s"] * len(schemas))
        if not db.config.masked_columns:
            # Without globs only a comment can mask: when none does, nothing more is read.
            marked = await session.fetch(
                "SELECT COUNT(*) FROM information_schema.COLUMNS"
                f" WHERE TABLE_SCHEMA IN ({marks}) AND COLUMN_COMMENT LIKE %s",
                (*schemas, f"%{COMMENT_MARKER}%"),
                limit=1,
            )
            if not marked.rows or not int(marked.rows[0][0] or 0):
                return SchemaFacts(schema), 0
        columns = await session.fetch(
            "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, COLUMN_COMMENT"
            f" FROM information_schema.COLUMNS WHERE TABLE_SCHEMA IN ({marks})"
            " ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION",
            tuple(schemas),
            limit=MAX_COLUMNS,
        )
        views = await session.fetch(
            "SELECT TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION FROM information_schema.VIEWS"
            f" WHERE TABLE_SCHEMA IN ({marks})",
            tuple(schemas),
            limit=MAX_COLUMNS,
        )
    if columns.truncated:
        raise DbError(f"{db.config.name} has more than {MAX_COLUMNS:,} columns to judge")
    definitions = {(str(s), str(t)): str(d or "") for s, t, d in views.rows}
    gathered: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    for table_schema, table, column, comment in columns.rows:
        names, comments = gathered.setdefault((str(table_schema), str(table)), ([], []))
        names.append(str(column))
        comments.append(str(comment or ""))
    tables = {
        key: TableFacts(
            tuple(names),
            tuple(comments),
            view=definitions.get(key),
            is_view=key in definitions,
        )
        for key, (names, comments) in gathered.items()
    }
    return SchemaFacts(schema, tables), len(columns.rows)


def mask_result(result: ResultSet | None, plan: MaskPlan) -> ResultSet | None:
    """`result` with the planned columns masked; refuses a result not as wide as traced."""
    if result is None or plan.width is None:
        return result
    if len(result.columns) != plan.width:
        raise MaskedResult(
            "Blocked: the result's columns do not match the traced lineage, so it is withheld "
            "(masked columns)"
        )
    positions = plan.positions
    if not positions:
        return result
    rows = tuple(
        tuple(
            MASK if index in positions and cell is not None else cell
            for index, cell in enumerate(row)
        )
        for row in result.rows
    )
    return replace(result, rows=rows)


def mask_impact(impact: Impact | None, masked: Masker) -> Impact | None:
    """A change's preview with masked columns masked, and no Undo for a table holding one
    (its inverse statements would carry the raw values onto a card)."""
    if impact is None or not masked.active:
        return impact
    return replace(impact, statements=tuple(_statement(s, masked) for s in impact.statements))


def _statement(statement: StatementImpact, masked: Masker) -> StatementImpact:
    tables = [name.rsplit(".", 1)[-1].strip("`").lower() for name in statement.tables]
    hidden = {
        index
        for index, column in enumerate(statement.preview_columns)
        if _base(column) in masked.masked_names
    }
    rows = tuple(
        tuple(
            MASK if index in hidden and cell is not None else cell for index, cell in enumerate(row)
        )
        for row in statement.preview_rows
    )
    holds_masked = any(masked.holds_masked(table) for table in tables) or bool(hidden)
    changes: dict[str, object] = {"preview_rows": rows}
    if holds_masked and statement.undo:
        changes.update(undo=False, undo_reason=UNDO_MASKED)
    return replace(statement, **changes)  # type: ignore[arg-type]


UNDO_MASKED = "no Undo for a table with masked columns (its inverse would show their values)"


def _base(column: str) -> str:
    return column.split("→", 1)[0].strip().strip("`").lower()


_QUOTED = re.compile(r"'(?:[^'\\]|\\.|'')*'")


def redact_error(message: str) -> str:
    """A server error with its quoted values removed: "Duplicate entry '…' for key",
    "Truncated incorrect DOUBLE value: '…'" may carry a masked value."""
    return _QUOTED.sub("'…'", message)
