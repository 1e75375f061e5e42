"""What the catalog tools read: tables, columns, indexes, sample rows and EXPLAIN plans.

Every query here runs in a read-only session. Names given by the model are looked up in
information_schema first and only the catalog's own spelling is put into SQL, quoted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.db.cells import render_row
from bot.db.names import quote_identifier, unknown_name_message
from bot.db.session import Session
from bot.db.types import Cell, DbError, ResultSet, UnknownObject
from bot.sql.lexical import statement_text

# More tables than this in one schema are listed truncated.
MAX_TABLES = 5_000
_TABLE_TYPES = {"BASE TABLE": "table", "VIEW": "view", "SYSTEM VIEW": "system view"}
# Leading blanks and plain comments; an executable comment (/*! … */) is not skipped.
_LEADING_NOISE = re.compile(r"\A(?:\s+|/\*(?![!M]).*?\*/|(?:--\s|#)[^\n]*(?:\n|\Z))*", re.DOTALL)


async def current_schema(session: Session, configured: str | None) -> str:
    """The schema the database's URL names, or the session's default one."""
    if configured:
        return configured
    raw = await session.fetch("SELECT DATABASE()", limit=1)
    schema = raw.rows[0][0] if raw.rows else None
    if not schema:
        raise DbError(
            f"{session.pool.database_name} has no default database: add one to its URL "
            "(mysql://user@host:3306/name)"
        )
    return str(schema)


async def list_tables(session: Session, schema: str, cell_chars: int) -> ResultSet:
    raw = await session.fetch(
        "SELECT TABLE_NAME, TABLE_TYPE, TABLE_ROWS, TABLE_COMMENT FROM information_schema.TABLES"
        " WHERE TABLE_SCHEMA = %s ORDER BY TABLE_NAME",
        (schema,),
        limit=MAX_TABLES,
    )
    rows = []
    for name, table_type, estimated_rows, comment in sorted(raw.rows, key=lambda r: str(r[0])):
        kind = _TABLE_TYPES.get(table_type, str(table_type).lower())
        # Views report the comment "VIEW" and no row count; neither says anything.
        rows.append((name, kind, estimated_rows, "" if kind == "view" else comment))
    return _result(("name", "type", "estimated_rows", "comment"), rows, raw.truncated, cell_chars)


async def resolve_table(session: Session, schema: str, name: str) -> str:
    """The catalog's spelling of a table or view in `schema`, or UnknownObject with the closest."""
    raw = await session.fetch(
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s",
        (schema,),
        limit=MAX_TABLES * 10,
    )
    known = sorted(str(row[0]) for row in raw.rows)
    wanted = name.strip()
    if wanted.startswith("`") and wanted.endswith("`") and len(wanted) > 1:
        wanted = wanted[1:-1].replace("``", "`")
    qualifier = f"{schema}."
    if wanted not in known and wanted.startswith(qualifier):
        wanted = wanted[len(qualifier) :]
    if wanted in known:
        return wanted
    folded = [table for table in known if table.lower() == wanted.lower()]
    if len(folded) == 1:
        return folded[0]
    raise UnknownObject(unknown_name_message("table", name, known))


async def get_columns(
    session: Session, schema: str, table: str, cell_chars: int
) -> tuple[ResultSet, ResultSet]:
    name = await resolve_table(session, schema, table)
    columns = await session.fetch(
        "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT, COLUMN_KEY, EXTRA,"
        " COLUMN_COMMENT FROM information_schema.COLUMNS"
        " WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
        (schema, name),
        limit=10_000,
    )
    column_rows = [
        (column, column_type, nullable == "YES", default, key, extra, comment)
        for column, column_type, nullable, default, key, extra, comment in columns.rows
    ]
    statistics = await session.fetch(
        "SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME, SUB_PART, INDEX_TYPE"
        " FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s"
        " ORDER BY INDEX_NAME <> 'PRIMARY', INDEX_NAME, SEQ_IN_INDEX",
        (schema, name),
        limit=10_000,
    )
    indexes: dict[str, tuple[list[str], bool, str]] = {}
    for index, non_unique, column, sub_part, index_type in statistics.rows:
        parts, _, _ = indexes.setdefault(index, ([], not non_unique, index_type))
        parts.append(f"{column}({sub_part})" if sub_part else str(column))
    index_rows = [
        (index, ",".join(parts), unique, index_type)
        for index, (parts, unique, index_type) in indexes.items()
    ]
    return (
        _result(
            ("name", "type", "nullable", "default", "key", "extra", "comment"),
            column_rows,
            columns.truncated,
            cell_chars,
        ),
        _result(("name", "columns", "unique", "type"), index_rows, False, cell_chars),
    )


async def sample(
    session: Session, schema: str, table: str, limit: int, cell_chars: int
) -> ResultSet:
    name = await resolve_table(session, schema, table)
    # LIMIT n+1 keeps the server's work small and still tells whether there were more rows.
    raw = await session.fetch(
        f"SELECT * FROM {quote_identifier(schema)}.{quote_identifier(name)} LIMIT {limit + 1}",
        limit=limit,
    )
    result = raw.rendered(cell_chars)
    if result is None:
        raise DbError("the sample returned no rows at all")
    return result


async def explain(session: Session, sql: str) -> str:
    statement = statement_text(sql)  # trimmed by the server's rules, as the classifier does
    start = _LEADING_NOISE.match(statement)
    head = statement[start.end() if start else 0 :]
    first_word = re.match(r"[A-Za-z_]+", head)
    if head.startswith("/*"):
        raise DbError("explain takes a plain statement, not an executable comment")
    if first_word and first_word.group(0).upper() == "ANALYZE":
        raise DbError("explain never runs ANALYZE: it would execute the statement")
    if first_word and first_word.group(0).upper() in {"EXPLAIN", "DESCRIBE", "DESC"}:
        raise DbError("pass the statement itself; EXPLAIN FORMAT=JSON is added")
    if not statement:
        raise DbError("no statement to explain")
    raw = await session.fetch(f"EXPLAIN FORMAT=JSON {statement}", limit=1)
    if not raw.rows or raw.rows[0][0] is None:
        raise DbError("the server returned no plan")
    plan = raw.rows[0][0]
    return plan.decode() if isinstance(plan, bytes) else str(plan)


def _result(
    columns: tuple[str, ...],
    rows: Sequence[Sequence[Cell]],
    truncated: bool,
    cell_chars: int,
) -> ResultSet:
    """Catalog rows hold plain values; long comments and defaults are cut like any cell."""
    none = (None,) * len(columns)
    return ResultSet(
        columns=columns,
        rows=tuple(render_row(row, none, cell_chars) for row in rows),
        truncated=truncated,
    )
