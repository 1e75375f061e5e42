"""Whether an exact Undo exists for one statement: one function, asked before the approvers
are asked (bot.db.impact) and again when the approved statement runs (bot.db.bounded), so a
change is never offered an Undo the run does not keep.

No Undo for: what is not a single-table INSERT, UPDATE or DELETE (multi-table, REPLACE,
INSERT IGNORE, ON DUPLICATE KEY UPDATE, a LIMIT that is not a number); a statement running a
stored function or procedure that writes rows; a table without a primary or NOT NULL unique
key, with triggers, or (UPDATE, DELETE) with foreign keys cascading from it; an UPDATE of the
key; an INSERT whose keys are neither literal in its VALUES nor auto-increment; a count that
is unknown or only an estimate; more rows than `max_undo_rows`. Invisible and generated
columns are no reason: the rows are read by column name, and generated columns are left to
the server.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.db.images import TableMeta
from bot.db.impact_types import RowCount
from bot.sql import undo as sql_undo
from bot.sql.undo import RowChange


def undo_refusal(
    change: RowChange,
    meta: TableMeta | None,
    *,
    functions: Sequence[str] = (),
    rows: int | None = None,
    count: RowCount | None = None,
    max_undo_rows: int,
) -> str:
    """Why the statement has no exact Undo, or "" when it has one. `meta` is the written
    table's (None when it was not read); `rows`/`count` are its impact's, None at execution
    (where the rows are capped as they are read)."""
    if not change.exact:
        return change.reason
    if functions:
        return f"it runs {', '.join(functions)}, which writes rows Undo would not put back"
    if meta is None:
        return "the table it changes could not be read for an undo"
    if meta.reason:
        return meta.reason
    key = {column.lower() for column in meta.key}
    if change.kind == "UPDATE" and set(change.set_columns) & key:
        return "it changes the table's key"
    if change.kind == "INSERT":
        literal = bool(change.insert_rows) and (
            sql_undo.insert_keys(change, meta.columns, meta.key) is not None
        )
        # The server numbers the rows (LAST_INSERT_ID) only when no key value is given.
        numbered = (
            meta.auto_increment
            and bool(change.insert_columns)
            and not (key & set(change.insert_columns))
        )
        if not (literal or numbered):
            return "the keys of the inserted rows are not known"
    if count is None:
        return ""
    if rows is None or count is RowCount.UNKNOWN:
        return "the number of rows it changes is unknown"
    if count is RowCount.ESTIMATE:
        return "only an estimate of the rows it changes is known"
    if rows > max_undo_rows:
        return f"{rows:,} rows is more than max_undo_rows ({max_undo_rows:,}) kept for Undo"
    return ""
