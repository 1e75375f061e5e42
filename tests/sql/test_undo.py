"""Undo's SQL, built from the statement's own AST: the locking read keeps the statement's
WHERE, ORDER BY and LIMIT; statements without an exact undo say why; literals read back as
the value they came from."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest

from bot.sql.undo import (
    TableName,
    delete_inserted,
    insert_back,
    literal,
    plan_row_change,
    update_back,
)

LOCKING_READS = [
    # (statement, the locking read of the rows it changes)
    (
        "UPDATE orders SET status = 'x' WHERE id = 11",
        "SELECT * FROM `orders` WHERE id = 11 LIMIT 11 FOR UPDATE",
    ),
    (
        "DELETE FROM shop.orders WHERE status = 'pending' AND total > 5",
        "SELECT * FROM `shop`.`orders` WHERE status = 'pending' AND total > 5 LIMIT 11 FOR UPDATE",
    ),
    (
        "UPDATE orders SET total = 0 ORDER BY id DESC LIMIT 2",
        "SELECT * FROM `orders` ORDER BY id DESC LIMIT 2 FOR UPDATE",
    ),
    (
        "DELETE FROM orders AS o WHERE o.id = 1",
        "SELECT * FROM `orders` AS o WHERE o.id = 1 LIMIT 11 FOR UPDATE",
    ),
    (  # a LIMIT above the cap reads one row more than the cap: enough to know it is larger
        "DELETE FROM orders LIMIT 500",
        "SELECT * FROM `orders` LIMIT 11 FOR UPDATE",
    ),
]


@pytest.mark.parametrize(("statement", "read"), LOCKING_READS)
def test_the_locking_read_is_the_statements_own_where(statement: str, read: str) -> None:
    change = plan_row_change(statement, cap=10)
    assert change.exact, change.reason
    assert change.locking_read == read


NO_UNDO = [
    # (statement, why there is no exact undo)
    ("UPDATE a JOIN b ON a.id = b.id SET a.x = 1", "a multi-table UPDATE has no exact undo"),
    ("DELETE a FROM a JOIN b ON a.id = b.id", "a multi-table DELETE has no exact undo"),
    (
        "INSERT IGNORE INTO t (a) VALUES (1)",
        "INSERT IGNORE / ON DUPLICATE KEY may change existing rows",
    ),
    (
        "INSERT INTO t (a) VALUES (1) ON DUPLICATE KEY UPDATE a = 2",
        "INSERT IGNORE / ON DUPLICATE KEY may change existing rows",
    ),
    ("REPLACE INTO t (a) VALUES (1)", "only UPDATE, DELETE and INSERT have an undo"),
]


@pytest.mark.parametrize(("statement", "reason"), NO_UNDO)
def test_statements_without_an_exact_undo_say_why(statement: str, reason: str) -> None:
    assert plan_row_change(statement, cap=10).reason == reason


LITERALS = [
    # (value, literal): each reads back as the value, whatever the server's sql_mode
    (None, "NULL"),
    (42, "42"),
    (Decimal("20.00"), "20.00"),
    (0.1, "0.1"),
    ("it's", "'it''s'"),
    ("back\\slash", "_utf8mb4 x'6261636b5c736c617368'"),  # no escape meaning to depend on
    (b"\x00\xff", "x'00ff'"),
    (datetime.datetime(2026, 1, 2, 3, 4, 5, 6), "'2026-01-02 03:04:05.000006'"),
    (datetime.date(2026, 1, 2), "'2026-01-02'"),
    (datetime.timedelta(hours=-1, seconds=1), "'-00:59:59.000000'"),
]


@pytest.mark.parametrize(("value", "sql"), LITERALS)
def test_a_literal_reads_back_as_its_value(value: object, sql: str) -> None:
    assert literal(value).sql(dialect="mysql") == sql


def test_the_inverse_statements_name_the_values_they_expect() -> None:
    orders = TableName(None, "orders")
    assert update_back(orders, ["id"], [11], [("status", "pending")], [("status", "x")]) == (
        "UPDATE `orders` SET `status` = 'pending' WHERE `id` <=> 11 AND `status` <=> 'x'"
    )
    assert insert_back(orders, ["id", "status"], [[11, "pending"]]) == (
        "INSERT INTO `orders` (`id`, `status`) VALUES (11, 'pending')"
    )
    assert delete_inserted(orders, ["id"], [20], ["status"], ["new"]) == (
        "DELETE FROM `orders` WHERE `id` <=> 20 AND `status` <=> 'new'"
    )
