"""The preview of a query result in the thread: a heading line and a monospace table of
the first rows, short cells, as many columns as fit a screen (every row is in the CSV)."""

from __future__ import annotations

from typing import Any

from bot.agent.outcomes import QueryResult
from bot.db.types import Cell
from bot.slack import mrkdwn
from bot.slack.blocks.common import code_block, markdown_section

PREVIEW_ROWS = 10
PREVIEW_CELL_CHARS = 30
PREVIEW_WIDTH = 110  # characters a code block shows before it wraps, on a laptop
_SECTION_BUDGET = 2_900


def row_count(count: int) -> str:
    return f"{count:,} row" if count == 1 else f"{count:,} rows"


def title(result: QueryResult) -> str:
    """ "shop-staging — 50 rows (truncated)"."""
    marker = " (truncated)" if result.truncated else ""
    return f"{result.database} — {row_count(len(result.rows))}{marker}"


def _cell_text(cell: Cell) -> str:
    if cell is None:
        return "NULL"
    if isinstance(cell, bool):
        return "true" if cell else "false"
    text = " ".join(str(cell).split()) if isinstance(cell, str) else str(cell)
    # A backtick could end the code block early; this one looks the same and cannot.
    return text.replace("`", "ˋ")


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def preview_table(result: QueryResult, rows: int = PREVIEW_ROWS) -> tuple[str, int]:
    """The first `rows` rows as aligned plain text, and how many columns were left out."""
    columns = list(result.columns)
    cells = [[_cell_text(cell) for cell in row] for row in result.rows[:rows]]
    numeric = [
        bool(cells) and all(isinstance(row[i], int | float) for row in result.rows[:rows])
        for i in range(len(columns))
    ]
    widths: list[int] = []
    shown = 0
    total = 0
    for index, name in enumerate(columns):
        width = min(
            max([len(name), *(len(row[index]) for row in cells)]),
            PREVIEW_CELL_CHARS,
        )
        if shown and total + 2 + width > PREVIEW_WIDTH:
            break
        widths.append(width)
        total += width + (2 if shown else 0)
        shown += 1

    def line(values: list[str]) -> str:
        parts = []
        for index, width in enumerate(widths):
            value = _cut(values[index], width)
            parts.append(value.rjust(width) if numeric[index] else value.ljust(width))
        return "  ".join(parts).rstrip()

    lines = [line([_cell_text(name) for name in columns]), "  ".join("-" * w for w in widths)]
    lines.extend(line(row) for row in cells)
    return "\n".join(lines), len(columns) - shown


def preview_message(result: QueryResult) -> dict[str, Any]:
    """The preview as a message: a heading line and the table, within a section's limit."""
    rows = min(PREVIEW_ROWS, len(result.rows))
    while True:
        table, hidden = preview_table(result, rows)
        heading = f"*{mrkdwn.escape(result.database)}* — {row_count(len(result.rows))}"
        if result.truncated:
            heading += " (truncated: the query had more rows)"
        notes = []
        if len(result.rows) > rows:
            notes.append(f"first {rows} shown")
        if hidden:
            notes.append(f"{hidden} more column{'s' if hidden > 1 else ''} in the CSV")
        if notes:
            heading += f" · {', '.join(notes)}"
        body = heading if not result.columns else f"{heading}\n{code_block(mrkdwn.escape(table))}"
        if len(body) <= _SECTION_BUDGET or rows <= 1:
            body, _ = mrkdwn.truncate(body, _SECTION_BUDGET)
            break
        rows = max(1, rows // 2)
    fallback = f"{result.database} — {row_count(len(result.rows))}"
    return {"text": mrkdwn.escape(fallback), "blocks": [markdown_section(body)]}
