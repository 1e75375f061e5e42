"""The impact of a change measured on the real MariaDB before anyone approves it: the count
equals what then changes, an estimate when counting outruns the limit, never a made-up
number."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bench.datasets import connect, recreate_schema, schema_url
from bot.config import Approvals, Limits
from bot.db import Database, DatabaseRegistry
from bot.db.impact import DDL_NO_UNDO, measure, misread
from bot.db.impact_types import Impact, RowCount, StatementImpact
from bot.db.reach import look_up
from bot.sql.risk import classify
from tests.db.support import server_rows, staging
from tests.schemas import run_schema

SCHEMA = run_schema("dbagent_t_impact")
ORDERS = 300
SETUP = [
    "CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT NOT NULL, status VARCHAR(20),"
    " KEY ix_customer (customer_id))",
    "INSERT INTO orders SELECT seq, seq % 10, 'pending' FROM seq_1_to_300",
    "CREATE TABLE items (id INT PRIMARY KEY, order_id INT NOT NULL, qty INT)",
    "INSERT INTO items SELECT seq, 1 + seq % 300, 1 FROM seq_1_to_600",
    "CREATE TABLE notes (body VARCHAR(20))",  # no key at all
    "INSERT INTO notes VALUES ('a'), ('b')",
]


@pytest.fixture(scope="module")
def created() -> list[str]:
    return []


@pytest.fixture
async def url(mysql_url: str, created: list[str]) -> str:
    if not created:
        await recreate_schema(mysql_url, SCHEMA)
        for statement in SETUP:
            await server_rows(schema_url(mysql_url, SCHEMA), statement)
        created.append(SCHEMA)
    return schema_url(mysql_url, SCHEMA)


@pytest.fixture
async def db(url: str) -> AsyncIterator[Database]:
    opened = DatabaseRegistry([staging(url, name="impact")], Limits())
    yield opened.get("impact")
    await opened.close()


async def impact_of(db: Database, sql: str, **approvals: float) -> Impact:
    classification = classify(sql)
    reach = await look_up(db, programs=True)
    return await measure(db, classification, reach, Approvals(**approvals))


async def only(db: Database, sql: str, **approvals: float) -> StatementImpact:
    (statement,) = (await impact_of(db, sql, **approvals)).statements
    return statement


async def changed(url: str, sql: str) -> int:
    """Run the change for real, behind the bot's back, and roll it back."""
    connection = await connect(url)
    try:
        await connection.begin()
        async with connection.cursor() as cursor:
            affected = await cursor.execute(sql)
        await connection.rollback()
    finally:
        connection.close()
    return int(affected)


COUNTED = [
    # (sql, rows, count, why)
    ("UPDATE orders SET status = 'x' WHERE customer_id = 3", 30, RowCount.EXACT, "WHERE counted"),
    ("DELETE FROM orders WHERE id <= 7", 7, RowCount.EXACT, "a DELETE's WHERE counted"),
    (
        "UPDATE orders SET status = 'x' WHERE id > 100 ORDER BY id LIMIT 4",
        4,
        RowCount.EXACT,
        "LIMIT bounds the count",
    ),
    (
        "DELETE o, i FROM orders o JOIN items i ON i.order_id = o.id WHERE o.id <= 2",
        6,
        RowCount.EXACT,
        "multi-table DELETE: two orders and their four items",
    ),
    (
        "UPDATE orders o JOIN items i ON i.order_id = o.id SET i.qty = 5 WHERE o.id = 9",
        2,
        RowCount.EXACT,
        "multi-table UPDATE counts the rows of the table it writes",
    ),
    ("INSERT INTO notes VALUES ('c'), ('d'), ('e')", 3, RowCount.EXACT, "VALUES rows"),
    (
        "INSERT INTO notes SELECT status FROM orders WHERE id <= 11",
        11,
        RowCount.EXACT,
        "INSERT … SELECT counts the SELECT",
    ),
]


@pytest.mark.parametrize(("sql", "rows", "count", "why"), COUNTED, ids=[r[-1] for r in COUNTED])
async def test_the_count_equals_the_rows_then_changed(
    db: Database, url: str, sql, rows, count, why
) -> None:
    measured = await only(db, sql)
    assert (measured.rows, measured.count) == (rows, count), why
    assert await changed(url, sql) == rows, why


async def test_replace_and_on_duplicate_key_say_up_to(db: Database) -> None:
    replace = await only(db, "REPLACE INTO orders VALUES (1, 1, 'x'), (9999, 1, 'y')")
    assert (replace.rows, replace.count) == (2, RowCount.UP_TO)
    upsert = await only(
        db, "INSERT INTO orders VALUES (1, 1, 'x') ON DUPLICATE KEY UPDATE status = 'y'"
    )
    assert (upsert.rows, upsert.count, upsert.undo) == (1, RowCount.UP_TO, False)


async def test_an_update_preview_shows_the_old_value_beside_the_new(db: Database) -> None:
    measured = await only(db, "UPDATE orders SET status = 'cancelled' WHERE id IN (4, 5)")
    assert measured.preview_columns == ("id", "status", "status → new")
    assert measured.preview_rows == ((4, "pending", "cancelled"), (5, "pending", "cancelled"))
    assert measured.tables == (f"{SCHEMA}.orders",)


COMPUTED = [
    # (SET clause, the columns shown, the first row shown, why)
    (
        "customer_id = customer_id + 100",
        ("id", "customer_id", "customer_id → new"),
        (4, 4, 104),
        "an expression of the row's own values: the server computes it",
    ),
    (
        "status = CONCAT(status, '!'), customer_id = customer_id * 2",
        ("id", "status", "status → new", "customer_id", "customer_id → new"),
        (4, "pending", "pending!", 4, 8),
        "each assignment its own after-value",
    ),
    (
        "customer_id = customer_id + 1, status = customer_id",
        ("id", "customer_id", "customer_id → new", "status"),
        (4, 4, 5, "pending"),
        "none where it reads a column the SET changed before it (assigned left to right)",
    ),
]


@pytest.mark.parametrize(
    ("clause", "columns", "first", "why"), COMPUTED, ids=[c[-1] for c in COMPUTED]
)
async def test_an_update_preview_shows_computed_new_values_from_the_server(
    db: Database, clause: str, columns: tuple[str, ...], first: tuple[object, ...], why: str
) -> None:
    measured = await only(db, f"UPDATE orders SET {clause} WHERE id IN (4, 5)")
    assert measured.preview_columns == columns, why
    assert measured.preview_rows[0] == first, why


async def test_a_delete_preview_shows_the_first_five_rows_it_removes(db: Database) -> None:
    measured = await only(db, "DELETE FROM orders WHERE customer_id = 1 ORDER BY id")
    assert measured.preview_columns == ("id", "customer_id", "status")
    assert [row[0] for row in measured.preview_rows] == [1, 11, 21, 31, 41]


async def test_how_it_runs_an_index_or_a_full_scan(db: Database) -> None:
    indexed = await only(db, "UPDATE orders SET status = 'x' WHERE customer_id = 3")
    assert indexed.index == "ix_customer" and indexed.full_scan_rows is None
    scan = await only(db, "UPDATE orders SET status = 'x' WHERE status = 'nope'")
    assert scan.access == "ALL" and scan.full_scan_rows is not None and scan.index is None


async def test_an_estimate_when_counting_outruns_the_limit(db: Database) -> None:
    # Every four orders: 8.1 billion rows to count, which cannot finish in two seconds
    # however idle the machine; EXPLAIN answers at once.
    slow = (
        "DELETE a FROM orders a JOIN orders b JOIN orders c JOIN orders d "
        "WHERE a.customer_id + b.customer_id + c.customer_id + d.customer_id = -1"
    )
    measured = await only(db, slow, impact_timeout_s=2.0)
    assert measured.count is RowCount.ESTIMATE
    assert measured.rows is not None and measured.rows >= ORDERS  # EXPLAIN's own figure
    assert any("did not finish" in note for note in measured.notes)
    assert not measured.undo and "multi-table" in measured.undo_reason
    assert measured.uncounted == (
        "the rows the statement itself changes (only an estimate is known)",
    )


async def test_unknown_when_nothing_can_be_measured_and_no_number_is_made_up(
    db: Database,
) -> None:
    measured = await only(db, "DELETE FROM orders WHERE SLEEP(0.01) = 0")
    assert (measured.rows, measured.count) == (None, RowCount.UNKNOWN)
    assert measured.notes and not measured.undo
    assert await server_rows_count(db) == ORDERS  # nothing ran


async def server_rows_count(db: Database) -> int:
    run = await db.execute(["SELECT COUNT(*) FROM orders"], read_only=True, limit=1)
    assert run.last_result is not None
    value = run.last_result.rows[0][0]
    assert isinstance(value, int)
    return value


async def test_ddl_shows_the_table_size_and_that_it_cannot_be_rolled_back(db: Database) -> None:
    measured = await only(db, "ALTER TABLE orders ADD COLUMN note TEXT")
    assert measured.rollback is False and measured.undo is False
    assert measured.undo_reason == DDL_NO_UNDO
    assert measured.table_rows is not None and measured.data_length
    assert (measured.rows, measured.count) == (None, RowCount.UNKNOWN)


UNDO = [
    # (sql, max_undo_rows, undo, words in the reason, why)
    ("UPDATE orders SET status = 'x' WHERE id = 1", 10_000, True, "", "keyed and small"),
    ("DELETE FROM notes WHERE body = 'a'", 10_000, False, "no primary or unique key", "keyless"),
    ("UPDATE orders SET status = 'x'", 100, False, "max_undo_rows", "more rows than kept"),
    ("INSERT INTO orders VALUES (5000, 1, 'x')", 10_000, True, "", "an INSERT has its keys"),
]


@pytest.mark.parametrize(("sql", "most", "undo", "words", "why"), UNDO, ids=[r[-1] for r in UNDO])
async def test_undo_only_where_it_can_be_exact(db: Database, sql, most, undo, words, why) -> None:
    measured = await only(db, sql, max_undo_rows=most)
    assert measured.undo is undo, why
    assert words in measured.undo_reason, why


async def test_an_impact_survives_json(db: Database) -> None:
    impact = await impact_of(db, "UPDATE orders SET status = 'x' WHERE id IN (1, 2)")
    assert Impact.from_json(impact.to_json()) == impact


async def test_an_insert_select_shows_the_first_rows_it_would_add(db: Database) -> None:
    measured = await only(db, "INSERT INTO notes SELECT status FROM orders WHERE id <= 11")
    assert measured.preview_columns == ("status",)
    assert measured.preview_rows == (("pending",),) * 5


MODES = [
    # (sql_mode, counting queries are trusted, why)
    ("STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION", True, "default"),
    ("", True, "no mode at all"),
    ("PIPES_AS_CONCAT", False, "|| would be concatenation, not OR"),
    ("ANSI_QUOTES", False, '"x" would be a name, not a string'),
    ("STRICT_ALL_TABLES,NO_BACKSLASH_ESCAPES", False, "backslashes would be plain characters"),
    ("HIGH_NOT_PRECEDENCE", False, "NOT a BETWEEN … would bind differently"),
    ("oracle", False, "another dialect altogether, whatever the case"),
]


@pytest.mark.parametrize(("sql_mode", "trusted", "why"), MODES, ids=[r[-1] for r in MODES])
def test_counting_queries_run_only_where_the_server_reads_them_as_built(sql_mode, trusted, why):
    assert (misread(sql_mode) == "") is trusted, why
