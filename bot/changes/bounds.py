"""How many rows an approved change may write: one answer, in one place.

`bounds_for` turns the impact shown to the approvers into each statement's bound (the total
the server will write: the statement, its triggers, cascades and stored functions, plus the
margin; an exact 0 is a bound of 0; "up to N" bounds inserted and updated rows each by N).
`over_bound` says whether what a statement wrote inside the transaction is within it; the
bounded run (bot.db.bounded) asks it before COMMIT, and rolls the whole call back when it is
not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.db.impact_types import Impact, RowCount
from bot.db.session import RawResult
from bot.sql.lexical import trim_sql

_INFO = re.compile(r"Records:\s*(\d+)\s+Duplicates:\s*(\d+)", re.IGNORECASE)


def bounds_for(
    impact: Impact | None,
    statements: Sequence[str],
    *,
    margin: int,
    unknown: int,
) -> tuple[int, ...]:
    """The most rows the server may write for each statement: the total its impact stated
    (its own rows, its triggers', cascades' and stored functions') plus the margin; with
    `unknown` more for whatever the impact could not count, and `unknown` where the impact had
    no number (or no impact was computed). An exact 0 is a bound of 0 (plus the margin).
    "Up to N" (REPLACE, INSERT IGNORE, ON DUPLICATE KEY UPDATE) bounds the rows inserted and
    the rows updated or replaced, each, by N plus the margin (bot.db.bounded counts a row
    the server first tried to insert once, not twice)."""
    stated = {} if impact is None else {i: s for i, s in enumerate(impact.statements)}
    bounds = []
    for index, sql in enumerate(statements):
        statement = stated.get(index)
        if statement is None or trim_sql(statement.sql) != trim_sql(sql):
            bounds.append(unknown)  # the impact did not state this statement
        elif statement.uncounted:
            bounds.append((statement.total or 0) + margin + unknown)
        elif statement.total is not None:
            bounds.append(statement.total + margin)
        elif statement.rows is None or statement.count is RowCount.UNKNOWN:
            bounds.append(unknown)
        else:
            bounds.append(statement.rows + margin)
    return tuple(bounds)


def over_bound(raw: RawResult, written: int, bound: int, *, upsert: bool) -> str:
    """Why a statement that wrote `written` rows in all is over its `bound`, or "" when it
    is within it. An INSERT or REPLACE is held to the bound for the rows it inserted and,
    separately, for the rows it updated or replaced."""
    if upsert:
        records = server_records(raw)
        if records is not None:
            processed, duplicates = records
            inserted = processed - duplicates
            for count, what in ((inserted, "inserted"), (duplicates, "updated or replaced")):
                if count > bound:
                    return f"{what} {_rows(count)}, approved {bound}"
    if written > bound:
        own = raw.affected_rows or 0
        if written == own:
            return f"changed {_rows(written)}, approved {bound}"
        return (
            f"wrote {_rows(written)} (with its triggers, cascades and stored functions), "
            f"approved {bound}"
        )
    return ""


def server_records(raw: RawResult) -> tuple[int, int] | None:
    """(rows the statement processed, duplicates) from the server's info, when it gave one."""
    found = _INFO.search(raw.info or "")
    return (int(found.group(1)), int(found.group(2))) if found else None


def _rows(count: int) -> str:
    return f"{count} row{'' if count == 1 else 's'}"
