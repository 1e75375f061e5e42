"""Checks a message or view the bot built against Slack: slack_sdk's block models where
they exist, and Slack's documented limits where slack_sdk has no model (the
`data_visualization` block) or does not check them (table sizes, charts per message).

    assert_valid_message(message)   # {"text": …, "blocks": [...]}
    assert_valid_view(view)         # a Home tab or modal
"""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

MESSAGE_BLOCKS = 50
VIEW_BLOCKS = 100
TEXT_CHARS = 40_000
TABLE_ROWS = 100
TABLE_CELLS = 20
CHART_TITLE = 50
CHART_LABEL = 20
CHART_SERIES = 6
CHART_POINTS = 20
PIE_SEGMENTS = 6
CHARTS_PER_MESSAGE = 2


def _check_table(block: dict[str, Any]) -> None:
    rows = block["rows"]
    assert 1 <= len(rows) <= TABLE_ROWS, f"table has {len(rows)} rows"
    widths = {len(row) for row in rows}
    assert len(widths) == 1, "every table row must have the same number of cells"
    assert widths.pop() <= TABLE_CELLS
    for row in rows:
        for cell in row:
            assert cell["type"] in ("raw_text", "rich_text", "raw_number"), cell
            if cell["type"] == "raw_text":
                assert isinstance(cell["text"], str) and cell["text"], "empty table cell"
    settings = block.get("column_settings") or []
    assert len(settings) <= TABLE_CELLS
    assert all(s.get("align", "left") in ("left", "center", "right") for s in settings)


def _check_points(points: list[dict[str, Any]]) -> None:
    assert 1 <= len(points) <= CHART_POINTS, f"{len(points)} points"
    for point in points:
        assert isinstance(point["label"], str) and 1 <= len(point["label"]) <= CHART_LABEL
        assert isinstance(point["value"], int | float) and not isinstance(point["value"], bool)


def check_chart(block: dict[str, Any]) -> None:
    """The documented limits of the data visualization block."""
    assert set(block) <= {"type", "title", "chart", "block_id"}
    assert isinstance(block["title"], str) and 1 <= len(block["title"]) <= CHART_TITLE
    chart = block["chart"]
    assert chart["type"] in ("pie", "bar", "area", "line")
    if chart["type"] == "pie":
        segments = chart["segments"]
        assert 1 <= len(segments) <= PIE_SEGMENTS
        _check_points(segments)
        assert all(segment["value"] > 0 for segment in segments)
        return
    series = chart["series"]
    assert 1 <= len(series) <= CHART_SERIES
    names = [s["name"] for s in series]
    assert len(set(names)) == len(names), "series names must be unique"
    categories = chart["axis_config"]["categories"]
    assert all(1 <= len(c) <= CHART_LABEL for c in categories)
    for label in ("x_label", "y_label"):
        assert len(chart["axis_config"].get(label, "")) <= CHART_TITLE
    for one in series:
        assert 1 <= len(one["name"]) <= CHART_LABEL
        _check_points(one["data"])
        assert [p["label"] for p in one["data"]] == categories, "labels must match categories"


def check_blocks(blocks: list[dict[str, Any]], *, limit: int) -> None:
    assert len(blocks) <= limit, f"{len(blocks)} blocks (at most {limit})"
    charts = 0
    for block in blocks:
        if block["type"] == "data_visualization":
            check_chart(block)
            charts += 1
            continue
        parsed = Block.parse(block)
        assert parsed is not None, f"slack_sdk does not know {block['type']}"
        parsed.validate_json()
        if block["type"] == "table":
            _check_table(block)
    assert charts <= CHARTS_PER_MESSAGE, f"{charts} charts in one message"
    assert sum(b["type"] == "table" for b in blocks) <= 1, "one table per message"


def assert_valid_message(message: dict[str, Any]) -> None:
    assert isinstance(message.get("text"), str) and message["text"], "a message needs text"
    assert len(message["text"]) <= TEXT_CHARS
    check_blocks(message.get("blocks") or [], limit=MESSAGE_BLOCKS)


def assert_valid_view(view: dict[str, Any]) -> None:
    charts = [b for b in view.get("blocks") or [] if b["type"] == "data_visualization"]
    assert not charts, "charts are for messages"
    View(**view).validate_json()
    check_blocks(view.get("blocks") or [], limit=VIEW_BLOCKS)
