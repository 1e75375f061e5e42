"""The chart parameter: checked against the result's own columns and values, refused with
the reason, carried to the person on the QueryResult."""

from __future__ import annotations

import json

import pytest

from bot.agent.tools import ToolContext
from bot.agent.tools.chart import ChartSpec, as_number, chart_problem
from tests.agent.support import STAGING, reply_of

COLUMNS = ("day", "orders", "status")
ROWS = (("2026-01-01", 3, "paid"), ("2026-01-02", None, "paid"), ("2026-01-03", 5, "open"))


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({"type": "bar", "x": "day", "y": ["orders"]}, None),  # a NULL is a gap, not an error
        ({"type": "line", "x": "day", "y": ["revenue"]}, "no column 'revenue'"),  # named wrong
        ({"type": "bar", "x": "when", "y": ["orders"]}, "no column 'when'"),  # x named wrong
        ({"type": "bar", "x": "day", "y": ["status"]}, "'status' is not numeric"),  # text
        ({"type": "pie", "x": "day", "y": ["orders", "orders"]}, "exactly one y"),  # pie: one
        ({"type": "bar", "x": "day", "y": ["orders", "orders"]}, "same column twice"),
    ],
)
def test_a_chart_spec_is_checked_against_the_result(spec: dict, problem: str | None) -> None:
    found = chart_problem(ChartSpec.model_validate(spec), COLUMNS, ROWS)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


@pytest.mark.parametrize(
    ("kind", "rows", "truncated", "problem"),
    [
        ("bar", 21, False, "21 rows are too many points (at most 20)"),  # aggregate first
        ("pie", 7, False, "at most 6"),  # a pie of seven slices reads as noise
        ("line", 20, False, None),  # twenty points fit
        ("line", 5, True, "partial"),  # the rows are not all there is
    ],
)
def test_a_chart_too_big_to_read_is_refused_so_the_model_can_aggregate(
    kind: str, rows: int, truncated: bool, problem: str | None
) -> None:
    spec = ChartSpec.model_validate({"type": kind, "x": "day", "y": ["orders"]})
    many = tuple((f"d{i}", i + 1, "x") for i in range(rows))
    found = chart_problem(spec, COLUMNS, many, truncated=truncated)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


@pytest.mark.parametrize(
    ("cell", "number"),
    [
        (3, 3),
        (2.5, 2.5),
        ("12.50", 12.5),  # DECIMAL arrives as exact text
        ("-7", -7),
        (True, None),  # a flag is not a quantity
        ("12 apples", None),
        (None, None),
        (float("nan"), None),
    ],
)
def test_numbers_are_recognised_including_decimal_text(cell: object, number: object) -> None:
    assert as_number(cell) == number  # type: ignore[arg-type]


async def test_a_valid_chart_travels_on_the_result(tool_context: ToolContext) -> None:
    sql = "SELECT id, id * 2 AS doubled FROM events WHERE id <= 3"
    chart = {"type": "line", "x": "id", "y": ["doubled"], "title": "Doubling"}
    reply = await reply_of(
        tool_context, "execute_query", {"database": STAGING, "sql": sql, "chart": chart}
    )
    assert reply.result is not None
    assert reply.result.chart == chart
    assert "chart" not in json.loads(reply.content)


async def test_a_chart_on_a_missing_column_is_refused_to_the_model(
    tool_context: ToolContext,
) -> None:
    sql = "SELECT id FROM events WHERE id <= 3"
    chart = {"type": "bar", "x": "id", "y": ["total"]}
    reply = await reply_of(
        tool_context, "execute_query", {"database": STAGING, "sql": sql, "chart": chart}
    )
    # The spec still travels, so the person's side can say why there is no chart.
    assert reply.result is not None and reply.result.chart == chart
    assert "not drawn" in json.loads(reply.content)["chart"]
    assert json.loads(reply.content)["row_count"] == 3  # the rows still come back
