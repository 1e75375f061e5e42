"""What a change will do, as its approval card shows it: per statement the rows it changes
(digits, and how sure the count is), the first rows before → after, everything it reaches,
how it runs, and whether it can be rolled back or undone.

The numbers are the data layer's (`bot/db/impact_types.py`), measured read-only on the
server before the card was posted; nothing here estimates anything.
"""

from __future__ import annotations

from bot.db.impact_types import Impact, StatementImpact, own_rows_text, rows_text
from bot.db.types import Cell
from bot.slack import mrkdwn
from bot.slack.blocks.common import Block, code_block, context, markdown_section

MAX_STATEMENTS = 8  # statements described one by one; the rest are counted
_SECTION_CHARS = 2_900
_PREVIEW_CELL_CHARS = 24
_PREVIEW_WIDTH = 100


def rows_summary(impact: Impact | None) -> str:
    """The rows of the whole change, for the card's notification text."""
    if impact is None or not impact.statements:
        return "rows unknown"
    if len(impact.statements) == 1:
        return rows_text(impact.statements[0])
    parts = ", ".join(rows_text(statement) for statement in impact.statements[:3])
    more = "…" if len(impact.statements) > 3 else ""
    return f"{len(impact.statements)} statements: {parts}{more}"


def _size(data_length: int) -> str:
    size = float(data_length)
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TB"


def _how_it_runs(statement: StatementImpact) -> str | None:
    if statement.full_scan_rows is not None or statement.access == "ALL":
        scanned = statement.full_scan_rows
        rows = f" of {scanned} rows" if scanned is not None else ""
        return f":warning: full table scan{rows}: it locks every row it reads"
    if statement.index:
        access = f" ({mrkdwn.shown(statement.access)})" if statement.access else ""
        return f"uses index `{mrkdwn.code_text(statement.index)}`{access}"
    if statement.access:
        return f"access: {mrkdwn.shown(statement.access)}"
    return None


def _facts(statement: StatementImpact) -> list[str]:
    lines = [f"*Rows:* {rows_text(statement)}"]
    if statement.written:
        parts = [f"{own_rows_text(statement)} by the statement", *statement.written]
        lines.append("*Counted:* " + "; ".join(mrkdwn.shown(part) for part in parts))
    if statement.uncounted:
        shown = "; ".join(mrkdwn.shown(part) for part in statement.uncounted)
        lines.append(f":warning: *Not counted:* {shown}")
    reaches = [*statement.tables, *statement.triggers, *statement.cascades]
    if reaches:
        lines.append("*Reaches:* " + ", ".join(mrkdwn.shown(item) for item in reaches))
    how = _how_it_runs(statement)
    if how:
        lines.append(f"*How it runs:* {how}")
    if statement.table_rows is not None or statement.data_length is not None:
        size = []
        if statement.table_rows is not None:
            size.append(f"{statement.table_rows} rows")
        if statement.data_length is not None:
            size.append(_size(statement.data_length))
        lines.append(f"*Table size:* {', '.join(size)}")
    if not statement.rollback:
        lines.append(":warning: *Cannot be rolled back* (DDL commits at once)")
    if statement.undo:
        lines.append("*Undo:* available after it runs")
    else:
        why = f": {mrkdwn.shown(statement.undo_reason)}" if statement.undo_reason else ""
        lines.append(f"*Undo:* not available{why}")
    lines.extend(f"_{mrkdwn.shown(note)}_" for note in statement.notes)
    return lines


def _cell(cell: Cell) -> str:
    text = "NULL" if cell is None else mrkdwn.one_line(str(cell))
    text = text if len(text) <= _PREVIEW_CELL_CHARS else text[: _PREVIEW_CELL_CHARS - 1] + "…"
    return text.replace("`", "ˋ")


def preview_table(statement: StatementImpact) -> str | None:
    """The first rows the statement touches as a monospace table ("col → new" headers
    show what an UPDATE writes); None without a preview."""
    if not statement.preview_columns or not statement.preview_rows:
        return None
    header = [_cell(name) for name in statement.preview_columns]
    rows = [[_cell(cell) for cell in row] for row in statement.preview_rows]
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(value.ljust(widths[i]) for i, value in enumerate(line)).rstrip()
        for line in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    table = "\n".join(line[:_PREVIEW_WIDTH] for line in lines)
    return mrkdwn.code_text(table)


def impact_blocks(impact: Impact | None) -> list[Block]:
    """The impact as card blocks: per statement a section of facts, and its preview."""
    if impact is None or not impact.statements:
        return [context("*Impact:* not measured; the rows this change touches are unknown.")]
    blocks: list[Block] = []
    many = len(impact.statements) > 1
    for number, statement in enumerate(impact.statements[:MAX_STATEMENTS], start=1):
        title = f"*Statement {number}* ({mrkdwn.escape(statement.kind)})\n" if many else ""
        text = title + "\n".join(_facts(statement))
        blocks.append(markdown_section(mrkdwn.truncate(text, _SECTION_CHARS)[0]))
        preview = preview_table(statement)
        if preview is not None:
            shown = len(statement.preview_rows)
            heading = f"*First {shown} row{'s' if shown != 1 else ''} it changes:*"
            body = mrkdwn.truncate(preview, _SECTION_CHARS - len(heading) - 10)[0]
            blocks.append(markdown_section(f"{heading}\n{code_block(body)}"))
    rest = impact.statements[MAX_STATEMENTS:]
    if rest:
        counts = ", ".join(rows_text(statement) for statement in rest[:20])
        blocks.append(context(mrkdwn.truncate(f"{len(rest)} more statements: {counts}", 2_000)[0]))
    return blocks
