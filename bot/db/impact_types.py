"""What an approver sees before clicking: the impact of a change, computed read-only on the
server before its card is posted. Shared by the data layer (which computes it), the agent
(which bounds the execution by it) and the adapters (which show it). JSON-safe both ways."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from bot.db.types import Cell


class RowCount(StrEnum):
    """How sure a statement's row count is."""

    EXACT = "exact"  # SELECT COUNT(*) of the statement's own WHERE/JOIN, or VALUES rows
    UP_TO = "up_to"  # REPLACE / ON DUPLICATE KEY: at most this many
    ESTIMATE = "estimate"  # counting outran impact_timeout_s: EXPLAIN's estimate
    UNKNOWN = "unknown"  # neither worked: never a made-up number


@dataclass(frozen=True, slots=True)
class StatementImpact:
    sql: str  # the statement's exact text, as it will run
    kind: str  # UPDATE, DELETE, INSERT, REPLACE, CREATE, ALTER, ...
    rows: int | None  # None exactly when count is UNKNOWN
    count: RowCount
    # The first rows an UPDATE/DELETE touches, with the columns it changes
    # (for UPDATE with constant new values: "col" and "col → new" pairs).
    preview_columns: tuple[str, ...] = ()
    preview_rows: tuple[tuple[Cell, ...], ...] = ()
    # Everything it reaches: "schema.table" names, plus triggers and cascading foreign keys.
    tables: tuple[str, ...] = ()
    triggers: tuple[str, ...] = ()  # "schema.trigger (BEFORE UPDATE on schema.table)"
    cascades: tuple[str, ...] = ()  # "schema.child via fk_name (ON DELETE CASCADE)"
    # How it runs: EXPLAIN's access type ("ALL" is a full scan), rows examined, index used.
    access: str | None = None
    index: str | None = None
    full_scan_rows: int | None = None  # set when a full scan reads this many rows
    # DDL: the table's size, and that it cannot be rolled back.
    table_rows: int | None = None
    data_length: int | None = None
    rollback: bool = True  # False for DDL (MySQL/MariaDB commit it implicitly)
    undo: bool = False  # an exact Undo is possible
    undo_reason: str = ""  # why not, when undo is False
    notes: tuple[str, ...] = ()  # anything else the approver should read
    # The rows the server writes in all: the statement's own, its triggers', its cascades'
    # and its stored functions' (as far as they are counted); None when not measured.
    total: int | None = None
    written: tuple[str, ...] = ()  # each counted part beyond the statement, in words
    uncounted: tuple[str, ...] = ()  # each part that could not be counted, in words


@dataclass(frozen=True, slots=True)
class Impact:
    statements: tuple[StatementImpact, ...] = field(default_factory=tuple)
    duration_ms: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Impact:
        statements = []
        for item in data.get("statements") or ():
            values = dict(item)
            values["count"] = RowCount(values["count"])
            for name in (
                "preview_columns",
                "tables",
                "triggers",
                "cascades",
                "notes",
                "written",
                "uncounted",
            ):
                values[name] = tuple(values.get(name) or ())
            values["preview_rows"] = tuple(tuple(row) for row in values.get("preview_rows") or ())
            known = StatementImpact.__dataclass_fields__
            statements.append(StatementImpact(**{k: v for k, v in values.items() if k in known}))
        return cls(statements=tuple(statements), duration_ms=float(data.get("duration_ms", 0.0)))


def rows_text(statement: StatementImpact) -> str:
    """ "137 rows", "up to 137 rows", "about 137 rows (estimate)" or "unknown": digits,
    never a made-up number. The rows the server writes in all when the card counted more
    than the statement's own (its triggers, cascades, stored functions), and what is not
    counted said in words."""
    own = own_rows_text(statement)
    uncounted = " + rows not counted" if statement.uncounted else ""
    if statement.total is None or not (statement.written or statement.uncounted):
        return own + uncounted
    if statement.total == statement.rows and not statement.written:
        return own + uncounted
    up_to = "up to " if statement.count is RowCount.UP_TO else ""
    noun = "row" if statement.total == 1 else "rows"
    return f"{up_to}{statement.total} {noun} in all{uncounted}"


def own_rows_text(statement: StatementImpact) -> str:
    """The rows the statement itself changes, in digits (or "unknown")."""
    if statement.count is RowCount.UNKNOWN or statement.rows is None:
        return "unknown"
    noun = "row" if statement.rows == 1 else "rows"
    if statement.count is RowCount.UP_TO:
        return f"up to {statement.rows} {noun}"
    if statement.count is RowCount.ESTIMATE:
        return f"about {statement.rows} {noun} (estimate)"
    return f"{statement.rows} {noun}"
