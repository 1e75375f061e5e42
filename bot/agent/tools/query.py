"""execute_query: classify → guard → (grant) → run, every statement audited.

Rows are cut after fetching by the data layer (never by rewriting the SQL), and the reply says
exactly whether more rows existed. A write without a matching grant pauses the run for an
approver; once approved, the same path runs again and consumes the grant.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pydantic import Field

from bot.agent.outcomes import QueryResult
from bot.agent.tools.approved import CallAudit, run_approved
from bot.agent.tools.base import (
    AGENT_ONLY,
    ApprovalRequired,
    Parameters,
    Tool,
    ToolContext,
    ToolOutcome,
    ToolReply,
    classify_sql,
    dumps,
    may_write,
    table,
)
from bot.agent.tools.chart import ChartSpec, chart_problem
from bot.agent.tools.protection import (
    Protection,
    for_person,
    note,
    privilege_message,
    protection,
)
from bot.changes.execute import mixes_ddl_and_dml
from bot.config import Approvals
from bot.db.impact import measure
from bot.db.impact_types import Impact
from bot.db.masking import UNDO_MASKED, MaskedResult
from bot.db.reach import SNAPSHOT_TTL_S, ReachError, look_up
from bot.db.roles import current_role
from bot.db.types import DbError, Execution, MissingPrivilege
from bot.guard import NeedsApproval, Refused, judge
from bot.observability import observe
from bot.sql.masking import MaskPlan
from bot.sql.risk import Classification
from bot.sql.roles import switches_role

ROLE_SWITCH = (
    "Blocked: SET ROLE is refused: each statement runs under the database role of the "
    "person who asked ([databases.access]); it cannot be switched."
)


class QueryParameters(Parameters):
    database: str = Field(description="Name of a configured database.")
    sql: str = Field(
        description=(
            "The SQL to run, exactly as it should execute. Reads run at once; changes wait "
            "for an approver's click."
        )
    )
    limit: int | None = Field(
        default=None, ge=1, description="Most rows to return (default 50, at most 1000)."
    )
    chart: ChartSpec | None = Field(
        default=None,
        description=(
            "Optional: also draw the result as a chart for the person, from its own rows. "
            "x is the label column, y the numeric columns (one series each). Charts hold "
            "at most 20 points (6 slices for a pie): aggregate in SQL (GROUP BY, ORDER BY "
            "… LIMIT) so the result fits."
        ),
    )


UNCOUNTED = (
    "Blocked: not every row this change writes can be counted ahead ({parts}), so its card "
    "could not state the total the server will write, nor could that total bound it. "
    "Change it so the rows can be counted (a plain WHERE, no stored function that writes), "
    "or an operator may set [approvals] allow_uncounted = true."
)


def uncounted_refusal(impact: Impact, approvals: Approvals) -> str | None:
    """The refusal of a change whose rows cannot all be counted, unless allowed."""
    if approvals.allow_uncounted:
        return None
    parts = [part for statement in impact.statements for part in statement.uncounted]
    if not parts:
        return None
    return UNCOUNTED.format(parts="; ".join(dict.fromkeys(parts)))


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


async def _record_execution(
    audit: CallAudit, classification: Classification, texts: list[str], run: Execution
) -> None:
    """One record per statement that ran, with the text that reached the server."""
    ran = zip(classification.statements, texts, run.outcomes, strict=False)
    for statement, text, outcome in ran:
        rows = outcome.result.row_count if outcome.result is not None else outcome.affected_rows
        await audit(
            risk=statement.risk.value,
            sql=text,
            outcome="executed",
            rows=rows,
            duration_ms=outcome.duration_ms,
        )


def _reply(
    database: str,
    sql: str,
    run: Execution,
    capped_at: int | None,
    chart: ChartSpec | None,
    masked: str = "",
) -> ToolReply:
    note: dict[str, Any] = {"note": f"limit capped at {capped_at} rows"} if capped_at else {}
    if masked:
        note["masked"] = masked
    if run.note is not None:  # the person is told too, with the result
        note["replica"] = run.note
    result = run.last_result
    if result is not None:
        summary = f"{_plural(result.row_count, 'row')} returned" + (
            " (truncated)" if result.truncated else ""
        )
        problem = (
            chart_problem(chart, result.columns, result.rows, truncated=result.truncated)
            if chart
            else None
        )
        if problem is not None:
            note["chart"] = f"not drawn: {problem}"
        query_result = QueryResult(
            database=database,
            sql=sql,
            columns=result.columns,
            rows=result.rows,
            truncated=result.truncated,
            # Kept even when it cannot be drawn: the person is told why, the model too.
            chart=chart.to_json() if chart is not None else None,
            masked=masked,
            note=run.note,
        )
        return ToolReply(dumps(table(result, **note)), result=query_result, summary=summary)
    affected = sum(outcome.affected_rows or 0 for outcome in run.outcomes)
    answer: dict[str, Any] = {"affected_rows": affected}
    last_id = next((o.last_insert_id for o in reversed(run.outcomes) if o.last_insert_id), None)
    if last_id:
        answer["last_insert_id"] = last_id
    if len(run.outcomes) > 1:
        answer["statements"] = [o.affected_rows for o in run.outcomes]
    return ToolReply(dumps({**answer, **note}), summary=f"{_plural(affected, 'row')} affected")


def _reach_failed(database: str, exc: ReachError) -> ToolReply:
    text = f"Error: could not read what the statement reaches on {database}: {exc}"
    return ToolReply(text, summary=text)


def _masked_reply(
    protect: Protection, plans: list[MaskPlan], run: Execution, reply: Any
) -> ToolReply:
    """The reply built from `run` with its results masked; withheld when one cannot be."""
    try:
        masked = protect.execution(run, plans)
    except MaskedResult as exc:
        return ToolReply(exc.message, summary=exc.message)
    result = masked.last_result
    line = note(plans[-1:] if plans else [], result.columns if result is not None else ())
    return reply(masked, line)  # type: ignore[no-any-return]


@for_person
async def execute_query(context: ToolContext, args: QueryParameters) -> ToolOutcome:
    db = context.databases.get(args.database)
    limits = context.settings.limits
    wanted = args.limit or limits.default_rows
    limit = min(wanted, limits.max_rows)
    classification = await classify_sql(args.sql, context.settings.limits)
    if isinstance(classification, ToolReply):
        return classification
    if switches_role(classification.pieces):  # the classifier's cut of args.sql
        text = ROLE_SWITCH
        await CallAudit(context, args.database, db.config.environment.value)(
            risk=classification.risk.value, sql=args.sql, outcome="refused", error=text
        )
        return ToolReply(text, summary=text)
    writes = not classification.is_read_only
    try:
        # What the server held a moment ago (and not since a write of ours, which may have
        # been DDL): enough to judge a read, or a write for its card.
        reach = await look_up(db, programs=writes, max_age_s=SNAPSHOT_TTL_S)
    except ReachError as exc:
        return _reach_failed(args.database, exc)
    protect = await protection(db, context.requester)
    plans = await protect.judge(classification.statements)
    if isinstance(plans, str):
        audit = CallAudit(context, args.database, db.config.environment.value)
        await audit(risk=classification.risk.value, sql=args.sql, outcome="refused", error=plans)
        return ToolReply(plans, summary=plans)
    decision = judge(classification, db.config, granted=False, reach=reach)
    if isinstance(decision, NeedsApproval):
        mixed = mixes_ddl_and_dml(classification)
        if mixed is not None:  # refused before any card: it could not run bounded
            decision = Refused(mixed)
    claim = None
    if isinstance(decision, NeedsApproval):
        claim = await context.grants.claim(context.session_id, args.database, args.sql)
        if claim is not None:
            # The approved run is judged by what the server holds now: a procedure or
            # trigger may have changed since its card was posted.
            try:
                reach = await look_up(db, programs=True, max_age_s=0)
            except ReachError as exc:
                await context.grants.release(claim.id)
                return _reach_failed(args.database, exc)
            decision = judge(classification, db.config, granted=True, reach=reach)

    observe.guard_decided(classification.risk.value, decision)
    environment = db.config.environment.value
    audit = CallAudit(context, args.database, environment)
    risk = classification.risk.value
    if claim is not None and isinstance(decision, Refused):
        await context.grants.release(claim.id)
    if isinstance(decision, Refused):
        await audit(risk=risk, sql=args.sql, outcome="refused", error=decision.reason)
        return ToolReply(decision.reason, summary=decision.reason)
    if isinstance(decision, NeedsApproval):
        measured = await measure(db, classification, reach, context.settings.approvals)
        impact = protect.impact(measured)
        refusal = uncounted_refusal(measured, context.settings.approvals)
        if refusal is not None:
            await audit(risk=risk, sql=args.sql, outcome="refused", error=refusal)
            return ToolReply(refusal, summary=refusal)
        await audit(risk=risk, sql=args.sql, outcome="awaiting_approval")
        return ApprovalRequired(
            args.database,
            environment,
            risk,
            args.sql,
            decision.reason,
            impact=impact,
            role=current_role() or "",
        )

    capped_at = limits.max_rows if wanted > limit else None
    if claim is not None:
        approved = await run_approved(
            context,
            db,
            classification,
            claim,
            audit=audit,
            reply=lambda run: _masked_reply(
                protect,
                plans,
                run,
                lambda done, line: _reply(
                    args.database, args.sql, done, capped_at, args.chart, line
                ),
            ),
            limit=limit,
            reach=reach,
        )
        if approved.undo_id and protect.holds_masked(_tables(classification)):
            approved = replace(approved, undo_id=None, undo_reason=UNDO_MASKED)
        return approved
    # A read of information_schema runs confined to rows about the database's schemas.
    statements = list(decision.texts or (s.text for s in classification.statements))
    try:
        run = await db.execute(
            statements,
            read_only=decision.read_only,
            use_replica=decision.use_replica,
            limit=limit,
            cut=decision.texts is None,  # the classifier's statements, exactly as it cut them
        )
    except DbError as exc:
        done = Execution(args.database, exc.outcomes)
        await _record_execution(audit, classification, statements, done)
        at = min(len(exc.outcomes), len(statements) - 1)
        failed = classification.statements[at]
        message = protect.error(exc.message)
        if isinstance(exc, MissingPrivilege):
            message = privilege_message(exc, args.database, db.config.schema_name)
        await audit(risk=failed.risk.value, sql=statements[at], outcome="error", error=message)
        text = message if message.startswith("Blocked:") else f"Error: {message}"
        if exc.outcomes:
            text += f" (the first {_plural(len(exc.outcomes), 'statement')} did run)"
        return ToolReply(text, summary=text)
    await _record_execution(audit, classification, statements, run)
    return _masked_reply(
        protect,
        plans,
        run,
        lambda done, line: _reply(args.database, args.sql, done, capped_at, args.chart, line),
    )


def _tables(classification: Classification) -> list[str]:
    return [
        ref.name
        for statement in classification.statements
        for ref in (*statement.targets, *statement.reads)
    ]


QUERY_TOOLS = (
    Tool(
        name="execute_query",
        description=(
            "Run SQL on a database. Read-only statements run at once in a read-only session; "
            "INSERT/UPDATE/DELETE/DDL on non-production databases pause for an approver's "
            "click and run after approval; production writes and transaction control are "
            "refused. Returns columns and rows (at most `limit`) and whether rows were cut."
        ),
        parameters=QueryParameters,
        handler=execute_query,
        modes=AGENT_ONLY,
        concurrent=False,
        progress=lambda args: f"Running query on {args.database}…",
        may_write=lambda args: may_write(args.sql),
    ),
)
