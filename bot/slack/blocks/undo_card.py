"""The Undo card: the approval of the inverse of an approved change. It says what it is
first — whose approved change it puts back, when, and how many rows in which tables — then
summarises the inverse statements (the first few as SQL, the rest counted by kind); the
full list is attached in the thread as a file (cards.py), never buried in the card.

Everything else (the facts, who may approve, the buttons) is the approval card's."""

from __future__ import annotations

from collections import Counter

from bot.changes.types import UNDO as UNDO_KIND
from bot.changes.types import PendingApproval
from bot.db.impact_types import Impact, RowCount, StatementImpact
from bot.slack import mrkdwn
from bot.slack.blocks.common import Block, code_block, context, markdown_section, person, slack_date
from bot.slack.blocks.impact import impact_blocks
from bot.sql.lexical import trim_sql

TITLE = ":leftwards_arrow_with_hook: Undo, needs approval"
SHOWN_STATEMENTS = 3  # as SQL in the card; the whole list is the attached file's
_SQL_CHARS = 2_400


def is_undo(pending: PendingApproval) -> bool:
    return pending.kind == UNDO_KIND


def attaches_full_sql(pending: PendingApproval) -> bool:
    """Whether the card lists only some of the statements (the file has them all)."""
    return is_undo(pending) and len(_statements(pending)) > SHOWN_STATEMENTS


def _statements(pending: PendingApproval) -> tuple[StatementImpact, ...]:
    return pending.impact.statements if pending.impact is not None else ()


def _rows(statements: tuple[StatementImpact, ...]) -> str:
    counted = [s.rows for s in statements if s.count is RowCount.EXACT and s.rows is not None]
    if len(counted) != len(statements) or not statements:
        return "its rows"
    total = sum(counted)
    return f"{total} row{'' if total == 1 else 's'}"


def _tables(statements: tuple[StatementImpact, ...]) -> str:
    names = list(dict.fromkeys(table for s in statements for table in s.tables))
    if not names:
        return ""
    shown = ", ".join(f"`{mrkdwn.code_text(name)}`" for name in names[:5])
    more = f" and {len(names) - 5} more tables" if len(names) > 5 else ""
    return f" in {shown}{more}"


def heading(pending: PendingApproval) -> str:
    """ "Undo of the change approved by @ada at 14:02: puts back 140 rows in `orders`"."""
    statements = _statements(pending)
    who = f" by {person(pending.undoes_approver)}" if pending.undoes_approver else ""
    when = f" at {slack_date(pending.undoes_approved_at)}" if pending.undoes_approved_at else ""
    return (
        f"*Undo of the change approved{who}{when}*: puts back {_rows(statements)}"
        f"{_tables(statements)}"
    )


def notification(pending: PendingApproval) -> str:
    """The heading in plain words, for the card's notification text."""
    statements = _statements(pending)
    who = f" by {person(pending.undoes_approver)}" if pending.undoes_approver else ""
    return f"Undo of the change approved{who} on {mrkdwn.escape(pending.database)}: puts back " + (
        f"{_rows(statements)}"
    )


def statement_blocks(pending: PendingApproval) -> list[Block]:
    """The inverse statements summarised: the first few as SQL, the others counted by kind,
    and one impact section for them all (the notes of each kept)."""
    statements = _statements(pending)
    if not statements:
        shown, _ = mrkdwn.truncate(mrkdwn.code_text(trim_sql(pending.sql)), _SQL_CHARS)
        return [markdown_section(code_block(shown)), *impact_blocks(pending.impact)]
    first = ";\n".join(trim_sql(s.sql) for s in statements[:SHOWN_STATEMENTS])
    shown, _ = mrkdwn.truncate(mrkdwn.code_text(first), _SQL_CHARS)
    blocks: list[Block] = [markdown_section(code_block(shown))]
    kinds = Counter(s.kind for s in statements)
    summary = ", ".join(f"{count} {kind}" for kind, count in kinds.most_common())
    if len(statements) > SHOWN_STATEMENTS:
        blocks.append(
            context(
                f"{len(statements)} inverse statements ({mrkdwn.escape(summary)}); the first "
                f"{SHOWN_STATEMENTS} are shown, the full list is attached in this thread."
            )
        )
    exact = all(s.count is RowCount.EXACT and s.rows is not None for s in statements)
    combined = StatementImpact(
        sql=pending.sql,
        kind=" + ".join(kinds) if len(kinds) > 1 else statements[0].kind,
        rows=sum(s.rows or 0 for s in statements) if exact else None,
        count=RowCount.EXACT if exact else RowCount.UNKNOWN,
        tables=tuple(dict.fromkeys(t for s in statements for t in s.tables)),
        triggers=tuple(dict.fromkeys(t for s in statements for t in s.triggers)),
        cascades=tuple(dict.fromkeys(c for s in statements for c in s.cascades)),
        undo=all(s.undo for s in statements),
        undo_reason=next((s.undo_reason for s in statements if s.undo_reason), ""),
        notes=tuple(dict.fromkeys(note for s in statements for note in s.notes)),
    )
    blocks.extend(impact_blocks(Impact(statements=(combined,))))
    return blocks
