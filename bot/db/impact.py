"""The impact of a change, measured on the server before its card is posted: read-only, on
the primary (where it will run), within `[approvals] impact_timeout_s` for all of it.

Per statement: how many rows it will change (exact COUNT, "up to", EXPLAIN's estimate when
counting outruns the limit, or unknown — never a made-up number), the first rows it
touches, everything it reaches (tables, triggers, cascading foreign keys), how the server
finds the rows (EXPLAIN), a DDL's table size, and whether an exact Undo is possible. The SQL
comes from bot.sql.impact; nothing here builds SQL from the statement.

A statement's count does not see what the statements before it in the same call change.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.changes.undo_rules import undo_refusal
from bot.config import Approvals
from bot.db.counting import ROWLESS, Beyond, beyond
from bot.db.images import table_meta
from bot.db.impact_types import Impact, RowCount, StatementImpact
from bot.db.reach import Reached, ServerReach, walk
from bot.db.types import Cell, DbError, ResultSet
from bot.sql.impact import PREVIEW_ROWS, Plan, plan
from bot.sql.risk import Classification, Risk, Statement, TableRef
from bot.sql.undo import plan_row_change

if TYPE_CHECKING:
    from bot.db.database import Database

log = logging.getLogger(__name__)
LARGE_TABLE_ROWS = 10_000
_PLAN_INLINE_CHARS = 4_000  # a full scan of at least this many rows is called out
_DML = frozenset({"INSERT", "REPLACE", "UPDATE", "DELETE"})
_MIN_STEP_S = 0.05  # less time than this left: the step is skipped, not started
_KEYS = (
    "SELECT INDEX_NAME, COLUMN_NAME, NULLABLE FROM information_schema.STATISTICS"
    " WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND NON_UNIQUE = 0"
    " ORDER BY INDEX_NAME <> 'PRIMARY', INDEX_NAME, SEQ_IN_INDEX"
)
_SIZE = (
    "SELECT TABLE_ROWS, DATA_LENGTH FROM information_schema.TABLES"
    " WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s"
)
# sql_mode flags under which the same text parses differently (MariaDB's compatibility modes
# imply some of them).
_MISREAD_MODES = frozenset(
    {"ANSI", "ANSI_QUOTES", "PIPES_AS_CONCAT", "NO_BACKSLASH_ESCAPES", "HIGH_NOT_PRECEDENCE"}
    | {"ORACLE", "MSSQL", "DB2", "POSTGRESQL", "MAXDB"}
)
DDL_NO_UNDO = "DDL cannot be undone: MySQL/MariaDB commit it at once"


class _Budget:
    def __init__(self, seconds: float, clock: Callable[[], float]) -> None:
        self.seconds = seconds
        self._clock = clock
        self._deadline = clock() + seconds

    def left(self) -> float:
        return self._deadline - self._clock()


@dataclass(frozen=True, slots=True)
class _Explained:
    access: str | None = None
    index: str | None = None
    rows: int | None = None  # estimated rows of the written tables
    full_scan_rows: int | None = None
    table: str = ""


async def measure(
    database: Database,
    classification: Classification,
    reach: ServerReach,
    approvals: Approvals,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> Impact:
    """The impact of every statement; what could not be measured in time says so."""
    started = clock()
    budget = _Budget(approvals.impact_timeout_s, clock)
    misread = await _misread_modes(database, budget)
    measured = []
    for statement in classification.statements:
        try:
            measured.append(
                await _statement(database, statement, reach, approvals, budget, misread)
            )
        except Exception as exc:  # the card still goes out, saying plainly what is not known
            log.warning("measuring the impact of a statement failed", exc_info=True)
            measured.append(
                StatementImpact(
                    statement.text,
                    statement.kind,
                    None,
                    RowCount.UNKNOWN,
                    undo_reason="its impact could not be measured",
                    notes=(f"its impact could not be measured ({type(exc).__name__})",),
                )
            )
    return Impact(tuple(measured), duration_ms=(clock() - started) * 1000)


async def _statement(
    database: Database,
    statement: Statement,
    reach: ServerReach,
    approvals: Approvals,
    budget: _Budget,
    misread: str,
) -> StatementImpact:
    kind = statement.kind
    if statement.risk is Risk.DDL:
        reached = _reached_fields(walk(statement, reach))
        return await _ddl(database, statement, reach, budget, reached)
    if kind not in _DML:
        reached = _reached_fields(walk(statement, reach))
        extra = beyond(statement, reach)
        if kind in ROWLESS or kind == "CALL":
            # It changes no rows itself: only the stored programs it runs might.
            rows, count = (None, RowCount.UNKNOWN) if extra.uncounted else (0, RowCount.EXACT)
            uncounted = extra.uncounted
        else:
            rows, count = None, RowCount.UNKNOWN
            uncounted = (f"the rows a {kind} statement changes", *extra.uncounted)
        return StatementImpact(
            statement.text,
            kind,
            rows,
            count,
            undo_reason="only INSERT, UPDATE and DELETE can be undone exactly",
            total=rows,
            uncounted=uncounted,
            **reached,
        )
    try:
        keys = await _keys(database, statement.targets, reach.schema, budget)
    except DbError as exc:
        keys, key_problem = {}, f"its tables' keys could not be read ({exc.message})"
    else:
        key_problem = ""
    rewritten = statement.rewritten  # read from the classifier's cut, not cut again
    if len(statement.text) <= _PLAN_INLINE_CHARS:
        built = plan(statement.text, kind, keys, rewritten=rewritten)
    else:  # parsing a long statement would hold the event loop
        built = await asyncio.to_thread(
            functools.partial(plan, statement.text, kind, keys, rewritten=rewritten)
        )
    if misread:  # the queries would not mean what the statement means: run none of them
        built = dataclasses.replace(
            built, count_sql=None, explain_sql=None, preview_sql=None, problem=misread
        )
    notes = [note for note in (key_problem, built.problem) if note]
    # The card lists what fires; the guard, not knowing, counted UPDATE triggers too.
    upsert = built.upsert or bool(built.problem)
    reached = _reached_fields(walk(statement, reach, upsert=upsert))
    explained = await _explain(database, built, budget, notes)
    rows, count = await _count(database, built, explained, budget, notes)
    columns, preview = await _preview(database, built, budget, notes)
    notes.extend(_warnings(explained, count, kind))
    extra = beyond(statement, reach, upsert=upsert)
    total, written, uncounted = await _beyond_rows(database, extra, rows, count, budget)
    undo_reason = await _undo(database, statement, reach, extra, rows, count, approvals, budget)
    return StatementImpact(
        statement.text,
        kind,
        rows,
        count,
        preview_columns=columns,
        preview_rows=preview,
        access=explained.access,
        index=explained.index,
        full_scan_rows=explained.full_scan_rows,
        undo=not undo_reason,
        undo_reason=undo_reason,
        notes=tuple(notes),
        total=total,
        written=written,
        uncounted=uncounted,
        **reached,
    )


async def _beyond_rows(
    database: Database,
    extra: Beyond,
    rows: int | None,
    count: RowCount,
    budget: _Budget,
) -> tuple[int | None, tuple[str, ...], tuple[str, ...]]:
    """The total the server writes (the counted parts), each counted part beyond the
    statement in words, and each part not counted."""
    uncounted = list(extra.uncounted)
    if rows is None or count is RowCount.UNKNOWN:
        uncounted.insert(0, "the rows the statement itself changes")
    elif count is RowCount.ESTIMATE:
        uncounted.insert(0, "the rows the statement itself changes (only an estimate is known)")
    total = rows or 0
    written: list[str] = []
    for trigger in extra.triggers:
        if not trigger.per_row:
            continue
        if rows is None:
            uncounted.append(f"the rows trigger {trigger.description} writes")
            continue
        total += trigger.per_row * rows
        written.append(f"{_many(trigger.per_row * rows)} by trigger {trigger.description}")
    for cascade in extra.cascades:
        result = await _rows(database, cascade.count_sql, budget, 1)
        counted = (
            _number(result.rows[0][0]) if isinstance(result, ResultSet) and result.rows else None
        )
        if counted is None:
            uncounted.append(f"the rows {cascade.description} writes (counting failed: {result})")
            continue
        total += counted
        written.append(f"{_many(counted)} of {cascade.description}")
    return total, tuple(written), tuple(uncounted)


def _many(count: int) -> str:
    return f"{count:,} row{'' if count == 1 else 's'}"


def _warnings(explained: _Explained, count: RowCount, kind: str) -> list[str]:
    warnings = []
    if explained.full_scan_rows is not None and explained.full_scan_rows >= LARGE_TABLE_ROWS:
        warnings.append(
            f"a full scan of about {explained.full_scan_rows:,} rows of {explained.table}: "
            "it reads, and locks, every one of them"
        )
    if count is RowCount.UP_TO and kind in ("REPLACE", "INSERT"):
        warnings.append("the server reports a replaced or updated row as two affected rows")
    return warnings


def _reached_fields(found: Reached) -> dict[str, Any]:
    tables = []
    for reaching in found.writes:
        table = reaching.table
        name = f"{table.schema}.{table.name}" if table.schema else table.name
        if table.name and name not in tables:
            tables.append(name)
    return {"tables": tuple(tables), "triggers": found.triggers, "cascades": found.cascades}


async def _rows(
    database: Database, sql: str, budget: _Budget, limit: int
) -> ResultSet | str | None:
    """The rows of one read-only query within the budget; a str says why there are none."""
    left = budget.left()
    if left < _MIN_STEP_S:
        return f"the {budget.seconds:g} s limit (impact_timeout_s) was reached"
    try:
        run = await database.execute([sql], read_only=True, limit=limit, timeout_s=left)
    except DbError as exc:
        if "timed out" in exc.message:
            return f"it took longer than the {budget.seconds:g} s limit (impact_timeout_s)"
        return exc.message
    return run.last_result


async def _misread_modes(database: Database, budget: _Budget) -> str:
    """Why queries built from the statement's parse tree may not mean what the statement
    means on this server, or "" when they do. They are written as MySQL's default sql_mode
    reads SQL; modes that change how text parses (|| as concatenation, "…" as a name,
    backslashes, NOT's precedence, another database's dialect) make that untrue."""
    if budget.left() < _MIN_STEP_S:
        return f"the {budget.seconds:g} s limit (impact_timeout_s) was reached"
    try:
        async with database.primary_reads(timeout_s=budget.left()) as session:
            raw = await session.fetch("SELECT @@SESSION.sql_mode", limit=1)
    except DbError as exc:
        return f"the server's sql_mode could not be read ({exc.message})"
    return misread(str(raw.rows[0][0] or "") if raw.rows else "")


def misread(sql_mode: str) -> str:
    """Why a server with this sql_mode would read the counting queries differently, or ""."""
    clash = sorted(set(sql_mode.upper().split(",")) & _MISREAD_MODES)
    if clash:
        return (
            f"the server's sql_mode ({', '.join(clash)}) reads SQL differently from the "
            "parser the counting queries are built with, so none is run"
        )
    return ""


async def _keys(
    database: Database, targets: tuple[TableRef, ...], own: str | None, budget: _Budget
) -> dict[TableRef, tuple[str, ...]]:
    """Each written table's primary key, else its first unique key without NULLable columns."""
    found: dict[TableRef, tuple[str, ...]] = {}
    wanted = [t for t in targets if t.name and (t.schema or own) and t.schema != "*"]
    if not wanted or budget.left() < _MIN_STEP_S:
        return found
    async with database.primary_reads(timeout_s=budget.left()) as session:
        for table in wanted:
            raw = await session.fetch(_KEYS, (table.schema or own, table.name), limit=1000)
            indexes: dict[str, list[tuple[str, bool]]] = {}
            for index, column, nullable in raw.rows:
                indexes.setdefault(str(index), []).append((str(column), nullable == "YES"))
            for columns in indexes.values():
                if not any(nullable for _, nullable in columns):
                    found[table] = tuple(name for name, _ in columns)
                    break
    return found


def _number(value: Cell) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


async def _explain(
    database: Database, built: Plan, budget: _Budget, notes: list[str]
) -> _Explained:
    if built.explain_sql is None:
        return _Explained()
    result = await _rows(database, built.explain_sql, budget, 100)
    if not isinstance(result, ResultSet):
        notes.append(f"EXPLAIN did not answer: {result}")
        return _Explained()
    columns = [name.lower() for name in result.columns]
    rows = [dict(zip(columns, row, strict=True)) for row in result.rows]
    wanted = set(built.explain_tables)
    mine = [row for row in rows if row.get("table") in wanted] or rows[:1]
    if not mine:
        return _Explained()
    first = mine[0]
    access = first.get("type")
    estimates = [_number(row.get("rows")) for row in mine]
    total = (
        sum(n for n in estimates if n is not None)
        if any(n is not None for n in estimates)
        else None
    )
    first_rows = _number(first.get("rows"))
    return _Explained(
        access=str(access) if access is not None else None,
        index=str(first["key"]) if first.get("key") is not None else None,
        rows=total,
        full_scan_rows=first_rows if access == "ALL" else None,
        table=str(first.get("table") or ""),
    )


async def _count(
    database: Database, built: Plan, explained: _Explained, budget: _Budget, notes: list[str]
) -> tuple[int | None, RowCount]:
    exact = RowCount.UP_TO if built.up_to else RowCount.EXACT
    if built.rows is not None:
        return built.rows, exact
    if built.count_sql is not None:
        result = await _rows(database, built.count_sql, budget, 1)
        if isinstance(result, ResultSet) and result.rows:
            counted = _number(result.rows[0][0])
            if counted is not None:
                return counted, exact
        notes.append(f"counting the rows did not finish: {result}")
    if explained.rows is not None:
        return explained.rows, RowCount.ESTIMATE
    return None, RowCount.UNKNOWN


async def _preview(
    database: Database, built: Plan, budget: _Budget, notes: list[str]
) -> tuple[tuple[str, ...], tuple[tuple[Cell, ...], ...]]:
    if built.preview_sql is None:
        return (), ()
    result = await _rows(database, built.preview_sql, budget, PREVIEW_ROWS)
    if not isinstance(result, ResultSet):
        notes.append(f"the rows it touches could not be shown: {result}")
        return (), ()
    return result.columns, result.rows


async def _undo(
    database: Database,
    statement: Statement,
    reach: ServerReach,
    extra: Beyond,
    rows: int | None,
    count: RowCount,
    approvals: Approvals,
    budget: _Budget,
) -> str:
    """Why the statement has no exact Undo ("" when it has one): the rules the approved run
    applies too (bot.changes.undo_rules), on the table as the catalog shows it now."""
    cap, rewritten = approvals.max_undo_rows, statement.rewritten
    if len(statement.text) <= _PLAN_INLINE_CHARS:
        change = plan_row_change(statement.text, cap, rewritten)
    else:
        change = await asyncio.to_thread(plan_row_change, statement.text, cap, rewritten)
    meta = None
    if change.exact and change.table is not None and budget.left() >= _MIN_STEP_S:
        schema = change.table.schema or reach.schema
        if schema:
            try:
                async with database.primary_reads(timeout_s=budget.left()) as session:
                    meta = await table_meta(session, schema, change.table.name, change.kind)
            except DbError as exc:
                log.info("the table of a change could not be read: %s", exc.message)
    return undo_refusal(
        change,
        meta,
        functions=extra.functions,
        rows=rows,
        count=count,
        max_undo_rows=approvals.max_undo_rows,
    )


async def _ddl(
    database: Database,
    statement: Statement,
    reach: ServerReach,
    budget: _Budget,
    reached: dict[str, Any],
) -> StatementImpact:
    own = reach.schema
    table_rows: int | None = None
    data_length: int | None = None
    notes = ["it cannot be rolled back: MySQL/MariaDB commit DDL at once"]
    named = [t for t in statement.targets if t.name and t.schema != "*" and (t.schema or own)]
    if named and budget.left() >= _MIN_STEP_S:
        try:
            async with database.primary_reads(timeout_s=budget.left()) as session:
                for table in named:
                    raw = await session.fetch(_SIZE, (table.schema or own, table.name), limit=1)
                    if raw.rows:
                        rows_here, length = raw.rows[0]
                        table_rows = (table_rows or 0) + int(rows_here or 0)
                        data_length = (data_length or 0) + int(length or 0)
        except DbError as exc:
            notes.append(f"the table's size could not be read ({exc.message})")
    return StatementImpact(
        statement.text,
        statement.kind,
        None,
        RowCount.UNKNOWN,
        table_rows=table_rows,
        data_length=data_length,
        rollback=False,
        undo=False,
        undo_reason=DDL_NO_UNDO,
        notes=tuple(notes),
        **reached,
    )
