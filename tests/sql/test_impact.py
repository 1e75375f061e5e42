"""The measuring queries built from a change's own parse tree, one row per case."""

from __future__ import annotations

import pytest

from bot.sql.impact import plan
from bot.sql.risk import TableRef, classify

ORDERS, ITEMS, LOGS = TableRef(None, "orders"), TableRef(None, "items"), TableRef(None, "logs")
KEYS = {ORDERS: ("id",), ITEMS: ("id",)}

COUNTS = [
    # (sql, kind, count SQL or None, rows known without asking, up to, why)
    (
        "UPDATE orders SET status = 'cancelled' WHERE customer_id = 7",
        "UPDATE",
        "SELECT COUNT(*) FROM orders WHERE customer_id = 7",
        None,
        False,
        "a single-table UPDATE counts its WHERE",
    ),
    (
        "UPDATE orders SET status = 'x' WHERE id < 5 ORDER BY id LIMIT 3",
        "UPDATE",
        "SELECT COUNT(*) FROM (SELECT 1 FROM orders WHERE id < 5 ORDER BY id LIMIT 3) AS counted",
        None,
        False,
        "ORDER BY … LIMIT is counted through a derived table",
    ),
    (
        "UPDATE orders o JOIN items i ON i.order_id = o.id SET o.status = 'x', i.qty = 0 "
        "WHERE i.qty > 3",
        "UPDATE",
        "SELECT COUNT(DISTINCT o.`id`) + COUNT(DISTINCT i.`id`) FROM orders AS o JOIN items AS i "
        "ON i.order_id = o.id WHERE i.qty > 3",
        None,
        False,
        "a multi-table UPDATE counts distinct keys of each table it writes",
    ),
    (
        "UPDATE orders o JOIN logs l ON l.oid = o.id SET l.seen = 1",
        "UPDATE",
        "SELECT COUNT(*) FROM orders AS o JOIN logs AS l ON l.oid = o.id",
        None,
        True,
        "a written table without a key is counted by join rows: only a ceiling",
    ),
    (
        "DELETE FROM orders WHERE id = 1",
        "DELETE",
        "SELECT COUNT(*) FROM orders WHERE id = 1",
        None,
        False,
        "a single-table DELETE counts its WHERE",
    ),
    (
        "DELETE o, i FROM orders o JOIN items i ON i.order_id = o.id WHERE o.id = 3",
        "DELETE",
        "SELECT COUNT(DISTINCT o.`id`) + COUNT(DISTINCT i.`id`) FROM orders AS o JOIN items AS i "
        "ON i.order_id = o.id WHERE o.id = 3",
        None,
        False,
        "DELETE a, b FROM … counts both tables' rows",
    ),
    (
        "DELETE FROM i USING orders o JOIN items i ON i.order_id = o.id WHERE o.id = 3",
        "DELETE",
        "SELECT COUNT(DISTINCT i.`id`) FROM orders AS o JOIN items AS i ON i.order_id = o.id "
        "WHERE o.id = 3",
        None,
        False,
        "DELETE FROM … USING counts the listed table only",
    ),
    ("INSERT INTO t VALUES (1), (2), (3)", "INSERT", None, 3, False, "VALUES rows are counted"),
    ("INSERT INTO t SET a = 1", "INSERT", None, 1, False, "INSERT … SET adds one row"),
    (
        "INSERT INTO t SELECT * FROM u WHERE a > 1",
        "INSERT",
        "SELECT COUNT(*) FROM (SELECT * FROM u WHERE a > 1) AS counted",
        None,
        False,
        "INSERT … SELECT counts the SELECT",
    ),
    (
        "INSERT INTO t (a) VALUES (1) ON DUPLICATE KEY UPDATE a = 2",
        "INSERT",
        None,
        1,
        True,
        "ON DUPLICATE KEY says up to",
    ),
    ("INSERT IGNORE INTO t VALUES (1), (2)", "INSERT", None, 2, True, "IGNORE says up to"),
    ("REPLACE INTO t VALUES (1), (2)", "REPLACE", None, 2, True, "REPLACE says up to"),
    (
        "REPLACE INTO t SELECT * FROM u",
        "REPLACE",
        "SELECT COUNT(*) FROM (SELECT * FROM u) AS counted",
        None,
        True,
        "REPLACE … SELECT counts the SELECT, up to",
    ),
    (
        "DELETE FROM orders WHERE SLEEP(1) = 0",
        "DELETE",
        None,
        None,
        False,
        "a WHERE that is not read-only is never run ahead of approval",
    ),
    (
        "UPDATE `or``ders` SET a = 1",
        "UPDATE",
        "SELECT COUNT(*) FROM `or``ders`",
        None,
        False,
        "quoted names stay quoted",
    ),
]


@pytest.mark.parametrize(
    ("sql", "kind", "count_sql", "rows", "up_to", "why"), COUNTS, ids=[row[-1] for row in COUNTS]
)
def test_the_count_of_a_change(sql, kind, count_sql, rows, up_to, why):
    built = plan(sql, kind, KEYS)
    assert (built.count_sql, built.rows, built.up_to) == (count_sql, rows, up_to), why
    if count_sql is None and rows is None:
        assert built.problem, why


def test_every_query_built_is_read_only():
    for sql, kind, *_ in COUNTS:
        built = plan(sql, kind, KEYS)
        for query in (built.count_sql, built.preview_sql):
            if query is not None:
                assert classify(query).is_read_only, query
        if built.explain_sql is not None:
            assert built.explain_sql.startswith("DESCRIBE SELECT")


def test_an_update_preview_shows_the_key_and_each_new_value_beside_the_old_value():
    built = plan(
        "UPDATE orders SET status = 'cancelled', total = total * 2 WHERE id < 9", "UPDATE", KEYS
    )
    assert built.preview_sql == (
        "SELECT orders.`id`, status AS `status`, 'cancelled' AS `status → new`, total AS `total`, "
        "total * 2 AS `total → new` FROM orders WHERE id < 9 LIMIT 5"
    )


def test_a_delete_preview_shows_whole_rows_in_its_own_order_and_limit():
    built = plan("DELETE FROM orders WHERE id > 1 ORDER BY id DESC LIMIT 2", "DELETE", KEYS)
    assert built.preview_sql == "SELECT orders.* FROM orders WHERE id > 1 ORDER BY id DESC LIMIT 2"


def test_the_written_tables_and_those_without_a_key_are_named():
    built = plan("UPDATE orders o JOIN logs l ON l.oid = o.id SET l.seen = 1", "UPDATE", KEYS)
    assert built.written == (LOGS,) and built.keyless == (LOGS,)
    assert built.explain_tables == ("l",)


def test_a_value_spliced_into_the_statement_stays_a_value():
    built = plan("DELETE FROM orders WHERE note = 'x''; DROP TABLE orders; --'", "DELETE", KEYS)
    assert (
        built.count_sql == "SELECT COUNT(*) FROM orders WHERE note = 'x''; DROP TABLE orders; --'"
    )
    assert len(classify(built.count_sql).statements) == 1


def test_what_cannot_be_read_is_not_guessed():
    built = plan("UPDATE SET", "UPDATE", KEYS)
    assert built.count_sql is None and built.rows is None and built.problem


def test_only_on_duplicate_key_update_makes_an_insert_an_upsert():
    assert plan("INSERT INTO t (a) VALUES (1) ON DUPLICATE KEY UPDATE a = 2", "INSERT", {}).upsert
    assert not plan("INSERT IGNORE INTO t VALUES (1)", "INSERT", {}).upsert


def test_an_insert_select_previews_the_rows_it_would_add_within_its_own_limit():
    built = plan("INSERT INTO t SELECT a FROM u ORDER BY a LIMIT 2", "INSERT", {})
    assert built.preview_sql == (
        "SELECT * FROM (SELECT a FROM u ORDER BY a LIMIT 2) AS previewed LIMIT 5"
    )
