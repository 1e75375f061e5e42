"""Running an approved change from a tool call: the write-ahead record and the bounded run
(bot.changes.execute), then the outcome recorded, audited and answered, the grant released.

The order matters. The grant is claimed (a one-time grant is gone, a thread grant is held),
then the change is recorded `executing` (execution log and audit log) before its first
statement is sent, `committing` before COMMIT, and its outcome after. A bot stopped anywhere
in between leaves a record recovery reports as interrupted; nothing is ever re-run by itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from bot.agent.tools.base import ToolContext, ToolReply
from bot.changes.execute import run_change, write_ahead_record
from bot.db.bounded import BoundedRun, CommitUnknown, RolledBack
from bot.db.database import Database
from bot.db.reach import ServerReach
from bot.db.roles import current_role
from bot.db.types import DbError, Execution
from bot.sql.risk import Classification, Risk
from bot.state.executions import ExecutionRecord, Executions, Phase
from bot.state.grants import GrantClaim

T = TypeVar("T")


class CallAudit:
    """Records one statement of a call in the audit log, with the fields the call's records
    share (session, requester, approver, database, environment)."""

    def __init__(self, context: ToolContext, database: str, environment: str) -> None:
        self._context = context
        self._database = database
        self._environment = environment

    async def __call__(
        self,
        *,
        risk: str,
        sql: str,
        outcome: str,
        rows: int | None = None,
        error: str | None = None,
        duration_ms: float | None = None,
        execution_id: str | None = None,
    ) -> None:
        context = self._context
        await context.audit.record(
            session_id=context.session_id,
            requester=context.requester.user_id,
            approver=context.approver,
            database=self._database,
            environment=self._environment,
            risk=risk,
            sql=sql,
            outcome=outcome,
            rows=rows,
            error=error,
            duration_ms=duration_ms,
            execution_id=execution_id,
            origin=context.origin or None,
            role=current_role(),
        )


Reply = Callable[[Execution], ToolReply]


async def run_approved(
    context: ToolContext,
    db: Database,
    classification: Classification,
    claim: GrantClaim,
    *,
    audit: CallAudit,
    reply: Reply,
    limit: int,
    reach: ServerReach,
) -> ToolReply:
    executions = context.executions
    if executions is None:  # fail closed: no write-ahead record, no change
        await context.grants.release(claim.id)
        return ToolReply("Error: the execution log is not available; not run")
    ddl = any(statement.risk is Risk.DDL for statement in classification.statements)
    record = write_ahead_record(
        session_id=context.session_id,
        call_id=context.call_id,
        requester=context.requester.user_id,
        approver=context.approver,
        origin=context.origin,
        db=db,
        sql=classification.sql,
        claim=claim,
        transactional=not ddl,
    )
    run = _ApprovedRun(context, executions, record, claim, audit, classification)
    await executions.begin(record)
    await run.audit_sql("executing")
    approvals = context.settings.approvals
    try:
        done = await run_change(
            db, classification, claim, record, executions, reach, approvals, limit=limit
        )
    except CommitUnknown as exc:
        return await run.unknown(exc)
    except DbError as exc:
        return await run.failed(exc, ddl)
    except Exception:
        await run.broke(ddl)
        raise
    return await run.finished(done, reply)


class _ApprovedRun:
    """How one approved execution ends: recorded, audited, its grant released or kept."""

    def __init__(
        self,
        context: ToolContext,
        executions: Executions,
        record: ExecutionRecord,
        claim: GrantClaim,
        audit: CallAudit,
        classification: Classification,
    ) -> None:
        self.context = context
        self.executions = executions
        self.record = record
        self.claim = claim
        self.audit = audit
        self.classification = classification

    async def audit_sql(self, outcome: str, **details: Any) -> None:
        await self.audit(
            risk=self.classification.risk.value,
            sql=self.classification.sql,
            outcome=outcome,
            execution_id=self.record.id,
            **details,
        )

    async def unknown(self, exc: CommitUnknown) -> ToolReply:
        # The grant stays held: an unknown outcome is never run again on its own.
        text = f"Error: {exc.message}; check the database before running it again"
        await self.executions.finish(self.record.id, "outcome unknown")
        await self.audit_sql("outcome unknown", error=exc.message)
        return ToolReply(text, summary=text)

    async def failed(self, exc: DbError, ddl: bool) -> ToolReply:
        rolled_back = isinstance(exc, RolledBack)
        outcome = "rolled back" if rolled_back else "error"
        await self.executions.finish(self.record.id, outcome)
        await self.context.grants.release(self.claim.id)
        await self.audit_sql(outcome, error=exc.message, rows=_changed(exc.outcomes))
        summary = exc.message if rolled_back else f"Error: {exc.message}"
        if ddl and exc.outcomes:
            summary += f" (the first {len(exc.outcomes)} statement(s) did run)"
        content = summary if summary.startswith("Error:") else f"Error: {summary}"
        return ToolReply(content, summary=summary)

    async def broke(self, ddl: bool) -> None:
        """A failure of ours. Before COMMIT, run_bounded rolled the transaction back; DDL, or a
        failure around COMMIT, may have changed something: the record stays open, its grant
        held, and a restart reports it."""
        kept = await self.executions.get(self.record.id)
        if ddl or kept is None or kept.phase is not Phase.EXECUTING:
            return
        await self.executions.finish(self.record.id, "error")
        await self.context.grants.release(self.claim.id)
        await self.audit_sql("error")

    async def finished(self, done: BoundedRun, reply: Reply) -> ToolReply:
        kept = await self.executions.get(self.record.id)
        undo_id = None if kept is None or done.undo_reason else kept.undo_id
        await self.executions.finish(self.record.id, "executed", undo_id)
        await self.context.grants.release(self.claim.id)
        statements = self.classification.statements
        for statement, ran in zip(statements, done.execution.outcomes, strict=False):
            rows = ran.result.row_count if ran.result is not None else ran.affected_rows
            await self.audit(
                risk=statement.risk.value,
                sql=statement.text,
                outcome="executed",
                rows=rows,
                duration_ms=ran.duration_ms,
                execution_id=self.record.id,
            )
        answer = reply(done.execution)
        return ToolReply(
            answer.content,
            result=answer.result,
            summary=answer.summary,
            undo_id=undo_id,
            undo_reason="" if undo_id else done.undo_reason,
        )


def _changed(outcomes: Any) -> int | None:
    counts = [o.affected_rows for o in outcomes if o.affected_rows is not None]
    return sum(counts) if counts else None
