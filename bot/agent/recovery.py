"""What the bot says at start about approved changes a stop cut off while they ran.

How far a change got decides what is known: statements sent inside a transaction whose
COMMIT never went out were rolled back by the server when the bot's connection closed (not
applied); a COMMIT under way, or DDL (which commits as it runs), may or may not have been
applied, and the person is told how to check. Nothing is ever re-run.
"""

from __future__ import annotations

import json

from bot.agent.outcomes import Interrupted
from bot.state.executions import ExecutionRecord, Phase

OUTCOME_UNKNOWN = "outcome unknown (the bot stopped while it ran)"


def is_call_of(arguments: str, record: ExecutionRecord) -> bool:
    """Whether an execute_query call's arguments are the change `record` ran."""
    try:
        data = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return False
    return (
        isinstance(data, dict)
        and data.get("database") == record.database
        and str(data.get("sql", "")).strip() == record.sql.strip()
    )


def interrupted_change(record: ExecutionRecord, by_rows: bool | None = None) -> Interrupted:
    """What the thread is told about a change a stop cut off, worded by how far it got;
    `by_rows` is what its rows said for a stop during COMMIT (bot.db.undo)."""
    where = f"{record.database} ({record.environment})"
    head = f"The bot stopped while an approved change was running on {where}:\n{record.sql}\n"
    after = " It was not run again, and its approval is gone."
    applied: bool | None = None
    if record.transactional and record.phase is Phase.EXECUTING:
        applied = False
        body = (
            f"Outcome: {OUTCOME_UNKNOWN} — but it ran inside a transaction and COMMIT was never "
            "sent, so the server rolled it back when the bot's connection closed: it was not "
            "applied." + after + " Ask again if it is still needed."
        )
    elif record.transactional and by_rows is not None:
        applied = by_rows
        found = (
            "every row it changed holds what it wrote: it was applied"
            if by_rows
            else "every row it would change still holds what it held before: it was not applied"
        )
        body = (
            f"Outcome: {OUTCOME_UNKNOWN} — COMMIT was being sent when it stopped; read back "
            f"after the restart, {found}." + after
        )
    else:
        why = (
            "COMMIT was being sent when it stopped"
            if record.transactional
            else "DDL commits on its own as it runs"
        )
        body = (
            f"Outcome: {OUTCOME_UNKNOWN}. {why}, so it may or may not have been applied."
            + after
            + " Check before doing anything else: read the rows (or the table definition) it "
            "changes and compare with what it should have done."
        )
    return Interrupted(
        execution_id=record.id,
        session_id=record.session_id,
        database=record.database,
        environment=record.environment,
        sql=record.sql,
        requester=record.requester,
        approver=record.approver,
        started_at=record.started_at,
        applied=applied,
        text=head + body,
        undo_id=record.undo_id if applied else None,
        pending_id=record.pending_id,
    )
