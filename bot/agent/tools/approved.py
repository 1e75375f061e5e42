"""Running an approved change: write-ahead record, bounded transaction, outcome, undo.

The order matters. The grant is claimed (a one-time grant is gone, a thread grant is held),
then the change is recorded `executing` (execution log and audit log) before its first
statement is sent, `committing` before COMMIT, and its outcome after. A bot stopped anywhere
in between leaves a record recovery reports as interrupted; nothing is ever re-run by itself.

DML runs in one transaction, bounded by the rows the card stated (bot.db.bounded); DDL, which
MySQL/MariaDB commit implicitly, runs alone and unbounded, and a call mixing the two is
refused before its card is posted.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from bot.agent.tools.base import ToolContext, ToolReply
from bot.changes.bounds import bounds_for
from bot.changes.grants import off_the_loop
from bot.db.bounded import (
    BoundedRun,
    CommitUnknown,
    RolledBack,
    WriteStep,
    run_bounded,
)
from bot.db.counting import beyond, may_update
from bot.db.database import Database
from bot.db.reach import ServerReach
from bot.db.roles import current_role
from bot.db.types import DbError, Execution
from bot.sql.risk import Classification, Risk
from bot.sql.undo import plan_row_change
from bot.state.executions import (
    ExecutionRecord,
    Executions,
    Phase,
    UndoRecord,
    call_execution_id,
)
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

MIXED_DDL = (
    "Blocked: this call mixes DDL ({ddl}) with data changes ({dml}). MySQL/MariaDB commit "
    "DDL implicitly, so the data changes could not be rolled back with it. Send the DDL in a "
    "call of its own, then the data changes."
)
NO_DDL_UNDO = "DDL cannot be undone (MySQL/MariaDB commit it implicitly)"


def mixes_ddl_and_dml(classification: Classification) -> str | None:
    """The refusal for a call holding both DDL and data changes, else None."""
    ddl = [s.kind for s in classification.statements if s.risk is Risk.DDL]
    dml = [s.kind for s in classification.statements if s.risk is Risk.WRITE]
    if not ddl or not dml:
        return None
    return MIXED_DDL.format(ddl=", ".join(dict.fromkeys(ddl)), dml=", ".join(dict.fromkeys(dml)))


def _write_ahead_record(
    context: ToolContext, db: Database, sql: str, claim: GrantClaim, transactional: bool
) -> ExecutionRecord:
    # Named after the model's call when there is one: the restart finds it (or knows that
    # nothing was sent). A direct run (a Run button, an Undo) has no call to name it.
    execution_id = (
        call_execution_id(context.session_id, context.call_id)
        if context.call_id
        else uuid.uuid4().hex
    )
    return ExecutionRecord(
        id=execution_id,
        session_id=context.session_id,
        database=db.config.name,
        environment=db.config.environment.value,
        sql=sql,
        requester=context.requester.user_id,
        approver=context.approver or claim.approver,
        grant_id=claim.id,
        transactional=transactional,
        # Only the run the click started shows on that card; a thread grant used again does not.
        pending_id=claim.pending_id if context.approver else None,
        started_at=time.time(),
        # Kept so recovery audits an interrupted change with where it came from and its role.
        origin=context.origin,
        role=current_role() or "",
    )


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
    record = _write_ahead_record(context, db, classification.sql, claim, not ddl)
    run = _ApprovedRun(context, executions, record, claim, audit, classification)
    await executions.begin(record)
    await run.audit_sql("executing")
    try:
        if ddl:
            texts = [statement.text for statement in classification.statements]
            execution = await db.execute(texts, read_only=False, limit=limit)
            done = BoundedRun(execution, (), NO_DDL_UNDO)
        else:
            done = await _run_dml(context, db, classification, claim, record, executions, reach)
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


async def _run_dml(
    context: ToolContext,
    db: Database,
    classification: Classification,
    claim: GrantClaim,
    record: ExecutionRecord,
    executions: Executions,
    reach: ServerReach,
) -> BoundedRun:
    approvals = context.settings.approvals
    texts = [statement.text for statement in classification.statements]
    bounds: tuple[int | None, ...] = claim.bounds or bounds_for(
        None, texts, margin=approvals.row_margin, unknown=approvals.max_rows_unknown
    )

    def plan() -> list[WriteStep]:
        steps = []
        for index, statement in enumerate(classification.statements):
            if statement.risk is Risk.READ_ONLY:
                steps.append(WriteStep(statement.text, None, None))
                continue
            bound = bounds[index] if index < len(bounds) else approvals.max_rows_unknown
            change = plan_row_change(statement.text, approvals.max_undo_rows, statement.rewritten)
            # What it sets off, as the server holds it now (it may differ from the card's).
            extra = beyond(statement, reach, upsert=may_update(statement))
            if extra.uncounted and not approvals.allow_uncounted:
                raise DbError(
                    "not run, nothing was changed: what it writes can no longer all be "
                    f"counted ({'; '.join(extra.uncounted)}), and [approvals] "
                    "allow_uncounted is off"
                )
            steps.append(
                WriteStep(
                    statement.text,
                    bound,
                    change,
                    cascades=tuple(cascade.locking_sql for cascade in extra.cascades),
                    functions=extra.functions,
                    kind=statement.kind,
                )
            )
        return steps

    steps = await off_the_loop(classification.sql, plan)

    async def before_commit(run: BoundedRun) -> None:
        # The images first: after a stop during COMMIT, recovery compares the rows with them.
        undo_id = await _keep_undo(executions, record, run)
        await executions.committing(record.id, undo_id)

    return await run_bounded(
        db, steps, max_undo_rows=approvals.max_undo_rows, before_commit=before_commit
    )


async def _keep_undo(
    executions: Executions, record: ExecutionRecord, done: BoundedRun
) -> str | None:
    if done.undo_reason or not done.images:
        return None
    undo = UndoRecord(
        id=uuid.uuid4().hex,
        execution_id=record.id,
        session_id=record.session_id,
        database=record.database,
        sql=record.sql,
        created_at=time.time(),
        images=tuple(image.to_json() for image in done.images),
    )
    await executions.save_undo(undo)
    return undo.id


def _changed(outcomes: Any) -> int | None:
    counts = [o.affected_rows for o in outcomes if o.affected_rows is not None]
    return sum(counts) if counts else None
