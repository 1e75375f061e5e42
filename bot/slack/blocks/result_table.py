"""A query result as people read it in Slack: a `table` block, the SQL behind it, the row
count, and the chart the model asked for, drawn from the rows themselves.

Slack's documented limits, kept here: a table holds 100 rows (header included) of at most
20 cells; a `data_visualization` block has a title of 50 characters, 1–6 series (or 1–6
pie segments) of at most 20 points, labels and series names of 20 characters, and a
message carries at most two of them (each result message here holds one). What does not
fit is cut and said so (tables) or refused with the reason (charts): a chart never shows
part of a result as if it were all.
"""

from __future__ import annotations

from typing import Any

from bot.agent.outcomes import QueryResult
from bot.agent.tools.chart import ChartSpec, ChartType, as_number
from bot.db.types import Cell
from bot.slack import mrkdwn, strings

Block = dict[str, Any]

TABLE_MAX_ROWS = 100  # the header row included
TABLE_MAX_COLUMNS = 20
PREVIEW_CELL_CHARS = 80
CHART_TITLE_CHARS = 50
CHART_LABEL_CHARS = 20
CHART_MAX_SERIES = 6
CHART_MAX_POINTS = 20
PIE_MAX_SEGMENTS = 6
SQL_CONTEXT_CHARS = 600
DEFAULT_PREVIEW_ROWS = 20  # [slack] preview_rows


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def cell_text(cell: Cell) -> str:
    """A cell as the table shows it: NULL as NULL, whitespace runs as one space, long text
    cut with "…" (the CSV keeps it whole)."""
    if cell is None:
        return "NULL"
    if isinstance(cell, bool):
        return "true" if cell else "false"
    text = " ".join(str(cell).split()) if isinstance(cell, str) else str(cell)
    return _cut(text, PREVIEW_CELL_CHARS) or " "  # a table cell may not be empty


def _numeric_columns(result: QueryResult, rows: int) -> list[bool]:
    shown = result.rows[:rows]
    return [
        bool(shown)
        and any(row[i] is not None for row in shown)
        and all(row[i] is None or as_number(row[i]) is not None for row in shown)
        for i in range(len(result.columns))
    ]


def _bold_cell(text: str) -> dict[str, Any]:
    """A header cell: bold, so the header reads as one (Slack draws every row alike)."""
    run = {"type": "text", "text": text, "style": {"bold": True}}
    return {"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": [run]}]}


def table_block(result: QueryResult, preview_rows: int) -> Block:
    """The header and the first `preview_rows` rows (at most 99) of the first 20 columns;
    number columns right-aligned."""
    rows = min(preview_rows, TABLE_MAX_ROWS - 1, len(result.rows))
    width = min(len(result.columns), TABLE_MAX_COLUMNS)
    numeric = _numeric_columns(result, rows)[:width]

    def line(cells: list[str]) -> list[dict[str, Any]]:
        return [{"type": "raw_text", "text": text} for text in cells]

    table_rows: list[list[dict[str, Any]]] = [
        [_bold_cell(cell_text(name)) for name in result.columns[:width]]
    ]
    table_rows.extend(line([cell_text(cell) for cell in row[:width]]) for row in result.rows[:rows])
    settings: list[dict[str, Any]] = [
        {"align": "right"} if is_number else {"align": "left"} for is_number in numeric
    ]
    return {"type": "table", "rows": table_rows, "column_settings": settings}


def summary_line(result: QueryResult, preview_rows: int) -> str:
    """ "*shop-staging* — 4 rows", and on a second line what the table leaves out: mrkdwn."""
    count = len(result.rows)
    database = f"*{mrkdwn.escape(result.database)}*"
    if not result.columns or (count == 0 and not result.truncated):
        return strings.RESULT_NO_ROWS.format(database=database)
    rows = strings.plural(count, "row")
    if result.truncated:
        rows = strings.RESULT_TRUNCATED.format(rows=rows)
    line = strings.RESULT_ROWS.format(database=database, rows=rows)
    left_out = []
    shown = min(preview_rows, TABLE_MAX_ROWS - 1)
    if count > shown:
        left_out.append(strings.RESULT_SHOWN_ROWS.format(shown=shown))
    if len(result.columns) > TABLE_MAX_COLUMNS:
        total = len(result.columns)
        left_out.append(strings.RESULT_SHOWN_COLUMNS.format(shown=TABLE_MAX_COLUMNS, total=total))
    if not left_out:
        return line
    return f"{line}\n{strings.RESULT_SHOWING.format(what=' and '.join(left_out))}"


def sql_context(sql: str) -> Block:
    """The SQL that produced the result, on one line, cut to fit a context block."""
    shown = mrkdwn.sql_inline(sql, SQL_CONTEXT_CHARS)
    return {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": strings.RESULT_SQL.format(sql=shown)}],
    }


def file_title(result: QueryResult) -> str:
    """The CSV's title: "shop-staging — 50 rows (truncated)"."""
    marker = " (truncated)" if result.truncated else ""
    return f"{result.database} — {strings.plural(len(result.rows), 'row')}{marker}"


def context_line(text: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


# -- charts -----------------------------------------------------------------------------


def _labels(result: QueryResult, column: str) -> list[str] | str:
    index = result.columns.index(column)
    labels = [_cut(cell_text(row[index]), CHART_LABEL_CHARS) for row in result.rows]
    if len(set(labels)) != len(labels):
        return strings.CHART_LABELS_COLLIDE.format(column=column, limit=CHART_LABEL_CHARS)
    return labels


def _values(result: QueryResult, column: str) -> list[int | float] | str:
    index = result.columns.index(column)
    values = []
    for row in result.rows:
        if row[index] is None:
            return strings.CHART_NULL.format(column=column)
        number = as_number(row[index])
        if number is None:
            return strings.CHART_NOT_NUMERIC.format(column=column)
        values.append(number)
    return values


SCALE_RATIO = 20  # series whose largest values differ more cannot share one axis


def _mixed_scales(series: list[tuple[str, list[int | float]]]) -> str | None:
    """Why series of very different sizes (counts and money) would mislead on one axis:
    the small one lies flat along the bottom."""
    if len(series) < 2:
        return None
    peaks = [(max(abs(v) for v in values), name) for name, values in series]
    (low, small), (high, large) = min(peaks), max(peaks)
    if low > 0 and high / low <= SCALE_RATIO:
        return None
    return strings.CHART_SCALES_DIFFER.format(small=small, large=large, low=low, high=high)


def chart_block(result: QueryResult) -> tuple[Block | None, str | None]:
    """The `data_visualization` block for the result's chart spec, or why there is none
    (a sentence for the person). (None, None) when no chart was asked for."""
    if result.chart is None:
        return None, None
    try:
        spec = ChartSpec.model_validate(result.chart)
    except ValueError:
        return None, "the chart request could not be read"
    if result.truncated:
        return None, strings.CHART_TRUNCATED.format(rows=len(result.rows))
    missing = [name for name in (spec.x, *spec.y) if name not in result.columns]
    if missing or not result.rows:
        return None, "the chart names columns the result does not have"
    limit = PIE_MAX_SEGMENTS if spec.type is ChartType.PIE else CHART_MAX_POINTS
    if len(result.rows) > limit:
        if spec.type is ChartType.PIE:
            reason = strings.CHART_TOO_MANY_SLICES.format(
                limit=limit, rows=len(result.rows), keep=limit - 1
            )
        else:
            reason = strings.CHART_TOO_MANY_POINTS.format(rows=len(result.rows), limit=limit)
        return None, reason
    labels = _labels(result, spec.x)
    if isinstance(labels, str):
        return None, labels
    series: list[tuple[str, list[int | float]]] = []
    for column in spec.y[:CHART_MAX_SERIES]:
        values = _values(result, column)
        if isinstance(values, str):
            return None, values
        series.append((column, values))
    mixed = _mixed_scales(series)
    if mixed is not None:
        return None, mixed
    title = _cut(spec.title or f"{', '.join(spec.y)} by {spec.x}", CHART_TITLE_CHARS)
    if spec.type is ChartType.PIE:
        column, values = series[0]
        bad = next((value for value in values if value <= 0), None)
        if bad is not None:
            return None, strings.CHART_NOT_POSITIVE.format(column=column, value=bad)
        segments = [
            {"label": label, "value": value} for label, value in zip(labels, values, strict=True)
        ]
        chart: dict[str, Any] = {"type": "pie", "segments": segments}
    else:
        chart = {
            "type": spec.type.value,
            "series": [
                {
                    "name": _cut(name, CHART_LABEL_CHARS),
                    "data": [
                        {"label": label, "value": value}
                        for label, value in zip(labels, values, strict=True)
                    ],
                }
                for name, values in series
            ],
            "axis_config": {
                "categories": labels,
                "x_label": _cut(spec.x, CHART_TITLE_CHARS),
                "y_label": _cut(", ".join(spec.y), CHART_TITLE_CHARS),
            },
        }
    return {"type": "data_visualization", "title": title, "chart": chart}, None


# -- the message --------------------------------------------------------------------------


def result_message(
    result: QueryResult, preview_rows: int, *, with_chart: bool = True
) -> dict[str, Any]:
    """One message for one result: the summary, the chart (when asked for and it fits),
    the table, and the SQL. The text fallback names the database and row count."""
    summary = summary_line(result, preview_rows)
    blocks: list[Block] = [{"type": "section", "text": {"type": "mrkdwn", "text": summary}}]
    chart, refused = chart_block(result) if with_chart else (None, None)
    if chart is not None:
        blocks.append(chart)
    if result.columns and result.rows:
        blocks.append(table_block(result, preview_rows))
    if refused is not None:
        blocks.append(context_line(mrkdwn.escape(strings.CHART_REFUSED.format(reason=refused))))
    if not with_chart and result.chart is not None:
        blocks.append(context_line(strings.CHART_BLOCK_REFUSED))
    if result.masked:  # which columns show [masked], and why: one line
        blocks.append(context_line(mrkdwn.escape(_cut(result.masked, SQL_CONTEXT_CHARS))))
    if result.note:
        blocks.append(context_line(mrkdwn.escape(strings.RESULT_NOTE.format(note=result.note))))
    blocks.append(sql_context(result.sql))
    fallback = f"{result.database} — {strings.plural(len(result.rows), 'row')}"
    return {"text": mrkdwn.escape(fallback), "blocks": blocks}
