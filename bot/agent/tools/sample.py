"""get_sample_data: a few rows of a table, so the model sees what the values look like."""

from __future__ import annotations

from pydantic import Field

from bot.agent.outcomes import QueryResult
from bot.agent.tools.base import (
    AGENT_ONLY,
    Parameters,
    Tool,
    ToolContext,
    ToolReply,
    dumps,
    error,
    table,
)
from bot.agent.tools.protection import for_person, note, protection
from bot.db.masking import MaskedResult


class SampleParameters(Parameters):
    database: str = Field(description="Name of a configured database.")
    table: str = Field(description="Table or view name, exactly as list_tables shows it.")
    limit: int | None = Field(
        default=None, ge=1, description="Rows to sample (default 20, at most 100)."
    )


@for_person
async def get_sample_data(context: ToolContext, args: SampleParameters) -> ToolReply:
    limits = context.settings.limits
    wanted = args.limit or limits.default_sample_rows
    limit = min(wanted, limits.max_sample_rows)
    db = context.databases.get(args.database)
    protect = await protection(db, context.requester)
    plan = protect.table(args.table)
    if isinstance(plan, str):
        return error(plan)
    try:
        result = protect.result(await db.sample(args.table, limit), plan)
    except MaskedResult as exc:
        return error(exc.message)
    masked = note([plan], result.columns)
    extra = {"note": f"limit capped at {limits.max_sample_rows} rows"} if wanted > limit else {}
    if masked:
        extra["masked"] = masked
    query_result = QueryResult(
        database=args.database,
        sql=f"-- sample of {args.table}, {limit} rows",
        columns=result.columns,
        rows=result.rows,
        truncated=result.truncated,
        masked=masked,
    )
    summary = f"{result.row_count} sample rows of {args.table}"
    return ToolReply(dumps(table(result, **extra)), result=query_result, summary=summary)


SAMPLE_TOOLS = (
    Tool(
        name="get_sample_data",
        description="Sample rows of a table (default 20, at most 100), read-only.",
        parameters=SampleParameters,
        handler=get_sample_data,
        modes=AGENT_ONLY,
        progress=lambda args: f"Sampling {args.table} in {args.database}…",
    ),
)
