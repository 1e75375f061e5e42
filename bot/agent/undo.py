"""Undo: the inverse of an approved change, as a new card under the same rules (impact, four
eyes, bound). Rows changed since are conflicts: listed on the card, and skipped."""

from __future__ import annotations

import time
import uuid
from dataclasses import replace

from bot.agent.loop import Parts
from bot.agent.outcomes import AwaitingApproval, Failed, Requester
from bot.changes.types import UNDO, PendingApproval
from bot.db.images import TableImage
from bot.db.impact_types import Impact
from bot.db.types import DbError
from bot.db.undo import plan_undo
from bot.state.executions import Executions

NOT_HERE = (
    "Nothing to undo here: that change was made in another conversation; use the Undo "
    "under its own outcome."
)


async def undo_card(
    parts: Parts, executions: Executions, undo_id: str, *, requester: Requester, session_id: str
) -> Failed | AwaitingApproval:
    """The pending approval of the inverse statements (not stored yet), or why there is none."""
    record = await executions.undo(undo_id)
    if record is None:
        return Failed("Nothing to undo: this change has no undo record")
    if record.session_id != session_id:
        # An Undo is honoured only where its change was made: elsewhere its card would show
        # the change's before-image values to people outside that conversation.
        return Failed(NOT_HERE)
    try:
        database = parts.databases.get(record.database)
        images = [TableImage.from_json(image) for image in record.images]
        plan = await plan_undo(database, images)
    except DbError as exc:
        return Failed(f"Error: the undo could not be prepared: {exc.message}")
    skipped = _skipped(plan.conflicts)
    if not plan.statements:
        return Failed("Nothing to undo: " + (skipped or "the change left no rows to put back"))
    if len(plan.sql) > parts.settings.limits.max_sql_chars:
        return Failed("Error: this undo is too large for one approval; undo it in parts")
    environment = database.config.environment
    statements = plan.statements
    original = await executions.get(record.execution_id)
    if skipped:  # the card shows the conflicts with the statements
        statements = (
            replace(statements[0], notes=(*statements[0].notes, skipped)),
            *statements[1:],
        )
    pending = PendingApproval(
        id=uuid.uuid4().hex,
        session_id=session_id,
        tool_call_id="",
        database=record.database,
        environment=environment.value,
        risk="write",
        sql=plan.sql,
        requester=requester.user_id,
        created_at=time.time(),
        reason=f"Undo of an approved change on {record.database}: {_first_line(record.sql)}",
        kind=UNDO,
        impact=Impact(statements=statements),
        required=parts.settings.approvals.required_for(environment),
        undoes_approver=(original.approver or "") if original is not None else "",
        undoes_approved_at=original.started_at if original is not None else record.created_at,
    )
    return AwaitingApproval(pending, text=skipped)


def _skipped(conflicts: tuple[str, ...]) -> str:
    if not conflicts:
        return ""
    shown = "; ".join(conflicts[:10])
    more = f"; and {len(conflicts) - 10} more" if len(conflicts) > 10 else ""
    return f"Skipped {len(conflicts)} row(s) changed since: {shown}{more}."


def _first_line(sql: str) -> str:
    line = sql.strip().splitlines()[0] if sql.strip() else ""
    return line if len(line) <= 120 else line[:119] + "…"
