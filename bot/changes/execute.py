"""Carrying out an approved change: its write-ahead record, and the run bounded by its card.

The record is written (bot.state.executions) before the first statement is sent, and marked
`committing`, with the Undo's row images kept, before COMMIT: a bot stopped anywhere in between
leaves a record recovery reports as interrupted; nothing is ever re-run by itself.

DML runs in one transaction, bounded by the rows the card stated (bot.db.bounded); DDL, which
MySQL/MariaDB commit implicitly, runs alone and unbounded, and a call mixing the two is
refused before its card is posted (mixes_ddl_and_dml). The agent's side of a run (claiming
the grant, the audit, the reply) is bot/agent/tools/approved.py.
"""

from __future__ import annotations

import time
import uuid

from bot.changes.bounds import bounds_for
from bot.changes.grants import off_the_loop
from bot.config import Approvals
from bot.db.bounded import BoundedRun, WriteStep, run_bounded
from bot.db.counting import beyond, may_update
from bot.db.database import Database
from bot.db.reach import ServerReach
from bot.db.roles import current_role
from bot.db.types import DbError
from bot.sql.risk import Classification, Risk
from bot.sql.undo import plan_row_change
from bot.state.executions import (
    ExecutionRecord,
    Executions,
    UndoRecord,
    call_execution_id,
)
from bot.state.grants import GrantClaim

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


def write_ahead_record(
    *,
    session_id: str,
    call_id: str,
    requester: str,
    approver: str | None,
    origin: str,
    db: Database,
    sql: str,
    claim: GrantClaim,
    transactional: bool,
) -> ExecutionRecord:
    """The record of a change about to be sent, for whom it runs (the requester, the approver
    whose click started it, the model's call that asked, where the request came from)."""
    # Named after the model's call when there is one: the restart finds it (or knows that
    # nothing was sent). A direct run (a Run button, an Undo) has no call to name it.
    execution_id = call_execution_id(session_id, call_id) if call_id else uuid.uuid4().hex
    return ExecutionRecord(
        id=execution_id,
        session_id=session_id,
        database=db.config.name,
        environment=db.config.environment.value,
        sql=sql,
        requester=requester,
        approver=approver or claim.approver,
        grant_id=claim.id,
        transactional=transactional,
        # Only the run the click started shows on that card; a thread grant used again does not.
        pending_id=claim.pending_id if approver else None,
        started_at=time.time(),
        # Kept so recovery audits an interrupted change with where it came from and its role.
        origin=origin,
        role=current_role() or "",
    )


async def run_change(
    db: Database,
    classification: Classification,
    claim: GrantClaim,
    record: ExecutionRecord,
    executions: Executions,
    reach: ServerReach,
    approvals: Approvals,
    *,
    limit: int,
) -> BoundedRun:
    """Send the approved statements, once, after `record` was written: DDL alone and
    unbounded (no Undo), DML in one transaction bounded by the card (run_dml)."""
    if any(statement.risk is Risk.DDL for statement in classification.statements):
        texts = [statement.text for statement in classification.statements]
        execution = await db.execute(texts, read_only=False, limit=limit)
        return BoundedRun(execution, (), NO_DDL_UNDO)
    return await run_dml(db, classification, claim, record, executions, reach, approvals)


async def run_dml(
    db: Database,
    classification: Classification,
    claim: GrantClaim,
    record: ExecutionRecord,
    executions: Executions,
    reach: ServerReach,
    approvals: Approvals,
) -> BoundedRun:
    """The data changes in one transaction, each statement bounded by the rows its card
    stated (the grant's bounds), what it sets off counted as the server holds it now."""
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
        undo_id = await keep_undo(executions, record, run)
        await executions.committing(record.id, undo_id)

    return await run_bounded(
        db, steps, max_undo_rows=approvals.max_undo_rows, before_commit=before_commit
    )


async def keep_undo(
    executions: Executions, record: ExecutionRecord, done: BoundedRun
) -> str | None:
    """Keep the row images of a run that has an exact Undo; its id, else None."""
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
