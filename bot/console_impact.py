"""What a change will do, as the console shows it before the y/n prompt: the same facts as
the approval card in Slack (bot/slack/blocks/impact.py) — per statement the rows it
changes, the first rows before → after, everything it reaches, how it runs, whether it can
be rolled back or undone — as plain lines. Every value is shown with visible() by the
console's `say`."""

from __future__ import annotations

from bot.db.impact_types import Impact, StatementImpact, own_rows_text, rows_text
from bot.db.types import Cell

MAX_STATEMENTS = 8  # described one by one, as on the card; the rest are counted
_CELL_CHARS = 24


def _how_it_runs(statement: StatementImpact) -> str | None:
    if statement.full_scan_rows is not None or statement.access == "ALL":
        rows = f" of {statement.full_scan_rows} rows" if statement.full_scan_rows else ""
        return f"full table scan{rows}: it locks every row it reads"
    if statement.index:
        access = f" ({statement.access})" if statement.access else ""
        return f"uses index {statement.index}{access}"
    return f"access: {statement.access}" if statement.access else None


def _cell(cell: Cell) -> str:
    text = "NULL" if cell is None else " ".join(str(cell).split())
    return text if len(text) <= _CELL_CHARS else text[: _CELL_CHARS - 1] + "…"


def _preview(statement: StatementImpact) -> list[str]:
    if not statement.preview_columns or not statement.preview_rows:
        return []
    header = [_cell(name) for name in statement.preview_columns]
    rows = [[_cell(cell) for cell in row] for row in statement.preview_rows]
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]
    lines = [" | ".join(v.ljust(widths[i]) for i, v in enumerate(line)) for line in [header, *rows]]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    shown = len(statement.preview_rows)
    return [f"    First {shown} row{'s' if shown != 1 else ''} it changes:"] + [
        f"      {line.rstrip()}" for line in lines
    ]


def _statement_lines(statement: StatementImpact) -> list[str]:
    lines = [f"  Rows: {rows_text(statement)}"]
    if statement.written:
        parts = [f"{own_rows_text(statement)} by the statement", *statement.written]
        lines.append("  Counted: " + "; ".join(parts))
    if statement.uncounted:
        lines.append("  Not counted: " + "; ".join(statement.uncounted))
    reaches = [*statement.tables, *statement.triggers, *statement.cascades]
    if reaches:
        lines.append("  Reaches: " + ", ".join(reaches))
    how = _how_it_runs(statement)
    if how:
        lines.append(f"  How it runs: {how}")
    if statement.table_rows is not None:
        lines.append(f"  Table size: {statement.table_rows} rows")
    if not statement.rollback:
        lines.append("  Cannot be rolled back (DDL commits at once)")
    if statement.undo:
        lines.append("  Undo: available after it runs")
    else:
        why = f": {statement.undo_reason}" if statement.undo_reason else ""
        lines.append(f"  Undo: not available{why}")
    lines.extend(f"  Note: {note}" for note in statement.notes)
    return lines + _preview(statement)


def impact_lines(impact: Impact | None) -> list[str]:
    """The impact as the console prints it, statement by statement."""
    if impact is None or not impact.statements:
        return ["Impact: not measured; the rows this change touches are unknown."]
    lines = ["Impact:"]
    many = len(impact.statements) > 1
    for number, statement in enumerate(impact.statements[:MAX_STATEMENTS], start=1):
        if many:
            lines.append(f" Statement {number} ({statement.kind}):")
        lines.extend(_statement_lines(statement))
    rest = impact.statements[MAX_STATEMENTS:]
    if rest:
        counts = ", ".join(rows_text(statement) for statement in rest[:20])
        lines.append(f" {len(rest)} more statements: {counts}")
    return lines
