"""Catalog tools: list_databases, list_tables, get_columns — metadata only, in both modes."""

from __future__ import annotations

import asyncio

from pydantic import Field

from bot.agent.tools.base import (
    BOTH_MODES,
    Parameters,
    Tool,
    ToolContext,
    ToolReply,
    dumps,
    table,
)
from bot.agent.tools.protection import MASKED_NOTE, for_person, masked_columns
from bot.db.types import DbError

DATABASE = Field(description="Name of a configured database, as list_databases shows it.")


class NoParameters(Parameters):
    pass


class DatabaseParameters(Parameters):
    database: str = DATABASE


class TableParameters(Parameters):
    database: str = DATABASE
    table: str = Field(description="Table or view name, exactly as list_tables shows it.")


async def _version(context: ToolContext, name: str) -> str:
    try:
        return await context.databases.get(name).server_version()
    except DbError as exc:
        return f"unavailable ({exc.message})"


async def list_databases(context: ToolContext, _: NoParameters) -> ToolReply:
    names = context.databases.names()
    versions = await asyncio.gather(*(_version(context, name) for name in names))
    rows = []
    for name, version in zip(names, versions, strict=True):
        config = context.databases.get(name).config
        rows.append([name, config.environment.value, config.description, version])
    return ToolReply(
        dumps(
            {
                "columns": ["name", "environment", "description", "version"],
                "rows": rows,
                "row_count": len(rows),
                "truncated": False,
            }
        )
    )


@for_person
async def list_tables(context: ToolContext, args: DatabaseParameters) -> ToolReply:
    db = context.databases.get(args.database)
    result = await db.list_tables()
    return ToolReply(dumps(table(result)))


@for_person
async def get_columns(context: ToolContext, args: TableParameters) -> ToolReply:
    db = context.databases.get(args.database)
    columns, indexes = await db.get_columns(args.table)
    described = {"columns": table(columns), "indexes": table(indexes)}
    masked = await masked_columns(db, context.requester, args.table)
    if masked:  # told up front, so the model neither filters on them nor is surprised
        described["masked"] = {"columns": masked, "note": MASKED_NOTE}
    return ToolReply(dumps(described))


CATALOG_TOOLS = (
    Tool(
        name="list_databases",
        description=(
            "List the configured databases: name, environment (production, staging, "
            "development), description and server version. Start here."
        ),
        parameters=NoParameters,
        handler=list_databases,
        modes=BOTH_MODES,
        progress=lambda _: "Listing databases…",
    ),
    Tool(
        name="list_tables",
        description=(
            "List the tables and views of a database: name, type, estimated rows, comment."
        ),
        parameters=DatabaseParameters,
        handler=list_tables,
        modes=BOTH_MODES,
        progress=lambda args: f"Listing tables in {args.database}…",
    ),
    Tool(
        name="get_columns",
        description=(
            "Describe a table: every column (name, type, nullable, default, key, extra, "
            "comment) and its indexes. Call it before writing SQL that uses the table."
        ),
        parameters=TableParameters,
        handler=get_columns,
        modes=BOTH_MODES,
        progress=lambda args: f"Reading columns of {args.table} in {args.database}…",
    ),
)
