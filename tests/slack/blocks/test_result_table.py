"""A result as people read it: a table block within Slack's limits, the SQL and the row
count, and a chart drawn from the rows or refused with the reason."""

from __future__ import annotations

import pytest

from bot.agent.outcomes import QueryResult
from bot.slack.blocks.result_table import (
    chart_block,
    result_message,
    table_block,
)
from tests.slack.block_limits import assert_valid_message, check_chart

SQL = "SELECT status, COUNT(*) AS orders, SUM(total) AS revenue\nFROM orders GROUP BY status"


def result(
    rows: list[tuple], columns: tuple[str, ...] = ("status", "orders", "revenue"), **extra
) -> QueryResult:
    return QueryResult(
        database="shop-staging",
        sql=extra.pop("sql", SQL),
        columns=columns,
        rows=tuple(rows),
        truncated=extra.pop("truncated", False),
        chart=extra.pop("chart", None),
    )


STATUSES = [("paid", 2, "25.50"), ("pending", 3, "17.50"), ("shipped", 1, "99.99")]


def cell_text(cell: dict) -> str:
    if cell["type"] == "rich_text":  # the header: bold text
        return "".join(run["text"] for run in cell["elements"][0]["elements"])
    return cell["text"]


def texts(table: dict) -> list[list[str]]:
    return [[cell_text(cell) for cell in row] for row in table["rows"]]


def test_the_table_has_a_header_row_and_right_aligned_numbers() -> None:
    table = table_block(result(STATUSES), 20)
    assert texts(table)[0] == ["status", "orders", "revenue"]
    assert texts(table)[1] == ["paid", "2", "25.50"]
    aligns = [setting["align"] for setting in table["column_settings"]]
    assert aligns == ["left", "right", "right"]  # DECIMAL text counts as a number


def test_null_shows_as_null_and_long_cells_are_cut_with_an_ellipsis() -> None:
    table = table_block(result([("x" * 500, None, None)]), 20)
    cells = texts(table)[1]
    assert cells[0].endswith("…") and len(cells[0]) <= 80
    assert cells[1:] == ["NULL", "NULL"]


@pytest.mark.parametrize(
    ("rows", "preview", "shown"),
    [
        (150, 20, 20),  # the configured preview
        (150, 99, 99),  # the most a table holds besides its header
        (5, 20, 5),  # fewer rows than the preview
    ],
)
def test_the_preview_holds_preview_rows_at_most(rows: int, preview: int, shown: int) -> None:
    many = result([(f"s{i}", i, i) for i in range(rows)])
    assert len(table_block(many, preview)["rows"]) == shown + 1


def test_a_wide_result_shows_its_first_twenty_columns_and_says_so() -> None:
    columns = tuple(f"c{i}" for i in range(25))
    wide = result([tuple(range(25))], columns=columns)
    message = result_message(wide, 20)
    table = next(b for b in message["blocks"] if b["type"] == "table")
    assert len(table["rows"][0]) == 20
    assert "Showing 20 of 25 columns; the CSV has every" in message["blocks"][0]["text"]["text"]
    assert_valid_message(message)


def test_each_result_says_its_sql_and_its_row_count() -> None:
    message = result_message(result(STATUSES), 20)
    summary = message["blocks"][0]["text"]["text"]
    assert summary == "*shop-staging* — 3 rows"
    sql_line = message["blocks"][-1]["elements"][0]["text"]
    assert "SELECT status, COUNT(*) AS orders" in sql_line and "\n" not in sql_line
    assert_valid_message(message)


def test_a_truncated_result_says_the_query_had_more_rows() -> None:
    message = result_message(result(STATUSES, truncated=True), 20)
    assert "first 3 rows (the query had more" in message["blocks"][0]["text"]["text"]


def test_database_names_and_sql_are_escaped_for_mrkdwn() -> None:
    message = result_message(result(STATUSES, sql="SELECT '<!channel>' AS `x`"), 20)
    sql_line = message["blocks"][-1]["elements"][0]["text"]
    assert "<!channel>" not in sql_line and "&lt;!channel&gt;" in sql_line


BAR = {"type": "bar", "x": "status", "y": ["orders", "revenue"], "title": "Orders by status"}
STATUSES_ONE_SCALE = [("paid", 20, "25.50"), ("pending", 30, "17.50"), ("shipped", 10, "99.99")]


def test_a_bar_chart_is_drawn_from_the_rows_themselves() -> None:
    block, refused = chart_block(result(STATUSES_ONE_SCALE, chart=BAR))
    assert refused is None and block is not None
    check_chart(block)
    series = {s["name"]: [p["value"] for p in s["data"]] for s in block["chart"]["series"]}
    assert series == {"orders": [20, 30, 10], "revenue": [25.5, 17.5, 99.99]}
    assert block["chart"]["axis_config"]["categories"] == ["paid", "pending", "shipped"]


def test_a_pie_chart_has_one_segment_per_row() -> None:
    pie = {"type": "pie", "x": "status", "y": ["orders"]}
    block, _ = chart_block(result(STATUSES, chart=pie))
    assert block is not None
    check_chart(block)
    assert [s["value"] for s in block["chart"]["segments"]] == [2, 3, 1]


@pytest.mark.parametrize(
    ("rows", "chart", "extra", "reason"),
    [
        ([(f"s{i}", i, i) for i in range(21)], BAR, {}, "a chart holds at most 20"),
        (STATUSES, BAR, {"truncated": True}, "incomplete"),  # part of a result is not all
        (
            [(f"s{i}", i + 1, 1) for i in range(7)],
            {**BAR, "type": "pie", "y": ["orders"]},
            {},
            "at most 6 slices",
        ),
        ([("a", 0, 1)], {**BAR, "type": "pie", "y": ["orders"]}, {}, "above zero"),
        ([("a", None, 1)], BAR, {}, "NULL"),
        ([("a" * 25 + "1", 1, 1), ("a" * 25 + "2", 2, 2)], BAR, {}, "look the same"),
        ([("a", "many", 1)], BAR, {}, "not a number"),
        (STATUSES, BAR, {}, "differ too much in size"),  # 3 orders would lie flat by 99.99
    ],
)
def test_a_chart_that_cannot_be_drawn_faithfully_is_refused_with_the_reason(
    rows: list[tuple], chart: dict, extra: dict, reason: str
) -> None:
    block, refused = chart_block(result(rows, chart=chart, **extra))
    assert block is None and refused is not None and reason in refused
    message = result_message(result(rows, chart=chart, **extra), 20)
    assert any(
        b["type"] == "context" and reason in b["elements"][0]["text"] for b in message["blocks"]
    )
    assert_valid_message(message)


def test_without_the_chart_block_the_table_stays_and_says_why() -> None:
    message = result_message(result(STATUSES_ONE_SCALE, chart=BAR), 20, with_chart=False)
    kinds = [b["type"] for b in message["blocks"]]
    assert "data_visualization" not in kinds and "table" in kinds
    assert_valid_message(message)
