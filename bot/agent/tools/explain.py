"""explain_query: EXPLAIN FORMAT=JSON of one read-only statement — never EXPLAIN ANALYZE,
which would run it."""

from __future__ import annotations

import json

from pydantic import Field

from bot.agent.tools.base import (
    AGENT_ONLY,
    Parameters,
    Tool,
    ToolContext,
    ToolReply,
    classify_sql,
    dumps,
    error,
)
from bot.agent.tools.protection import for_person, protection
from bot.db.reach import ReachError, look_up
from bot.guard import Refused, Run, judge

# Statements that are already about plans or metadata: there is nothing to explain.
_NOT_EXPLAINABLE = ("EXPLAIN", "DESC", "SHOW", "ANALYZE", "HELP")


class ExplainParameters(Parameters):
    database: str = Field(description="Name of a configured database.")
    sql: str = Field(description="One read-only statement (a SELECT), without EXPLAIN.")


@for_person
async def explain_query(context: ToolContext, args: ExplainParameters) -> ToolReply:
    db = context.databases.get(args.database)
    classification = await classify_sql(args.sql, context.settings.limits)
    if isinstance(classification, ToolReply):
        return classification
    if not classification.is_read_only:
        return error(
            "Blocked: explain_query explains read-only statements only; this is a "
            f"{classification.risk.value} statement. Explain the SELECT that finds its rows."
        )
    if len(classification.statements) != 1:
        return error("explain_query takes exactly one statement; send them one at a time.")
    statement = classification.statements[0]
    if statement.kind.upper().startswith(_NOT_EXPLAINABLE):
        return error(f"send the query itself, not {statement.kind}; EXPLAIN is added for you.")
    # A plan's row estimates answer a WHERE as well as its rows would: judged as the query.
    judged = await (await protection(db, context.requester)).judge([statement])
    if isinstance(judged, str):
        return error(judged)
    # Planning evaluates constant subqueries: a plan reads what the query reads.
    try:
        reach = await look_up(db, programs=False)
    except ReachError as exc:
        return error(f"could not read what the statement reaches on {args.database}: {exc}")
    decision = judge(classification, db.config, granted=False, reach=reach)
    if isinstance(decision, Refused):
        return error(decision.reason)
    # A plan of information_schema reads is the plan of their confined form (planning runs
    # constant subqueries, so the plan of the unconfined one could leak other schemas' rows).
    texts = decision.texts if isinstance(decision, Run) else None
    plan = await db.explain(texts[0] if texts else statement.text)
    try:
        parsed = json.loads(plan)
    except ValueError:
        return ToolReply(plan)
    return ToolReply(dumps({"database": args.database, "plan": parsed}))


EXPLAIN_TOOLS = (
    Tool(
        name="explain_query",
        description=(
            "The execution plan (EXPLAIN FORMAT=JSON) of one read-only statement, without "
            "running it. Use it to find out why a query is slow."
        ),
        parameters=ExplainParameters,
        handler=explain_query,
        modes=AGENT_ONLY,
        progress=lambda args: f"Explaining a query on {args.database}…",
    ),
)
