"""The impact on the approval card: rows as digits and how sure they are, the preview, what
the change reaches, how it runs, rollback and Undo — valid Block Kit whatever the data."""

from __future__ import annotations

import json

import pytest

from bot.db.impact_types import Impact, RowCount, StatementImpact
from bot.slack.blocks.impact import impact_blocks, rows_summary, rows_text
from tests.fakes.slack_server import block_kit_problem


def statement(**changes: object) -> StatementImpact:
    values: dict[str, object] = {
        "sql": "UPDATE orders SET status = 'cancelled' WHERE customer = 'Ada'",
        "kind": "UPDATE",
        "rows": 137,
        "count": RowCount.EXACT,
        **changes,
    }
    return StatementImpact(**values)  # type: ignore[arg-type]


def shown(impact: Impact) -> str:
    blocks = impact_blocks(impact)
    assert block_kit_problem(blocks) is None
    return json.dumps(blocks, ensure_ascii=False)


# (rows, how sure, what the card says, why)
ROWS = [
    (137, RowCount.EXACT, "137 rows", "an exact count, as digits"),
    (1, RowCount.EXACT, "1 row", "one row"),
    (1_000_000, RowCount.EXACT, "1000000 rows", "digits without separators"),
    (40, RowCount.UP_TO, "up to 40 rows", "REPLACE and ON DUPLICATE KEY: at most"),
    (5_000, RowCount.ESTIMATE, "about 5000 rows (estimate)", "EXPLAIN's estimate, marked"),
    (None, RowCount.UNKNOWN, "unknown", "never a made-up number"),
]


@pytest.mark.parametrize(("rows", "count", "text", "reason"), ROWS, ids=[r[-1] for r in ROWS])
def test_rows_are_digits_and_say_how_sure_they_are(
    rows: int | None, count: RowCount, text: str, reason: str
) -> None:
    impact = Impact(statements=(statement(rows=rows, count=count),))
    assert rows_text(impact.statements[0]) == text, reason
    assert f"*Rows:* {text}" in shown(impact), reason


def test_the_preview_shows_the_first_rows_before_and_after() -> None:
    impact = Impact(
        statements=(
            statement(
                preview_columns=("id", "status", "status → new"),
                preview_rows=((11, "pending", "cancelled"), (12, None, "cancelled")),
            ),
        )
    )
    text = shown(impact)
    assert "First 2 rows it changes" in text
    assert "status → new" in text and "pending" in text and "NULL" in text


def test_what_it_reaches_is_listed() -> None:
    impact = Impact(
        statements=(
            statement(
                tables=("shop.orders",),
                triggers=("shop.audit_orders (AFTER UPDATE on shop.orders)",),
                cascades=("shop.order_lines via fk_lines (ON DELETE CASCADE)",),
            ),
        )
    )
    text = shown(impact)
    for part in ("shop.orders", "shop.audit_orders", "fk_lines (ON DELETE CASCADE)"):
        assert part in text


def test_a_full_scan_is_called_out() -> None:
    text = shown(Impact(statements=(statement(access="ALL", full_scan_rows=1_000_000),)))
    assert "full table scan of 1000000 rows" in text and "locks every row" in text


def test_an_index_is_named() -> None:
    text = shown(Impact(statements=(statement(access="ref", index="idx_customer"),)))
    assert "idx_customer" in text


def test_ddl_shows_the_table_size_and_cannot_be_rolled_back() -> None:
    ddl = statement(
        sql="ALTER TABLE orders ADD COLUMN note TEXT",
        kind="ALTER",
        rows=None,
        count=RowCount.UNKNOWN,
        table_rows=1_000_000,
        data_length=52_428_800,
        rollback=False,
        undo_reason="DDL cannot be undone",
    )
    text = shown(Impact(statements=(ddl,)))
    assert "1000000 rows, 50.0 MB" in text
    assert "Cannot be rolled back" in text
    assert "not available: DDL cannot be undone" in text


def test_undo_availability_is_said_before_approval() -> None:
    assert "Undo:* available" in shown(Impact(statements=(statement(undo=True),)))
    no_key = statement(undo=False, undo_reason="the table has no primary or unique key")
    assert "no primary or unique key" in shown(Impact(statements=(no_key,)))


def test_many_statements_are_numbered_and_the_rest_counted() -> None:
    impact = Impact(statements=tuple(statement(rows=i) for i in range(1, 13)))
    text = shown(impact)
    assert "Statement 1" in text and "Statement 8" in text and "Statement 9" not in text
    assert "4 more statements" in text
    assert rows_summary(impact).startswith("12 statements: 1 row, 2 rows, 3 rows")


def test_without_a_measured_impact_the_card_says_the_rows_are_unknown() -> None:
    assert "unknown" in json.dumps(impact_blocks(None))
    assert rows_summary(None) == "rows unknown"


def test_hostile_cells_cannot_break_the_card() -> None:
    nasty = "<!channel> ``` *bold* \u202e" + "x" * 500
    impact = Impact(
        statements=(
            statement(
                preview_columns=("note",) * 20,
                preview_rows=tuple((nasty,) * 20 for _ in range(5)),
                tables=tuple(f"shop.t{i}" for i in range(300)),
                notes=(nasty,),
            ),
        )
    )
    text = shown(impact)
    assert "<!channel>" not in text
    assert "\u202e" not in text  # json.dumps keeps it as the character; it must be marked
    assert "&lt;U+202E&gt;" in text
