"""What every tool is made of: a name, a pydantic parameter model, a handler and its modes.

A handler returns a `ToolReply` (text for the model, and maybe a result set for the person)
or an `ApprovalRequired` that pauses the run. Failures it can word (DbError) become
"Error: …" replies in the registry; nothing a tool does ends the run with an exception.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from bot.agent.outcomes import QueryResult, Requester
from bot.config import Limits, Mode, Settings
from bot.db.impact_types import Impact
from bot.db.types import ResultSet
from bot.sql.risk import Classification, classify

if TYPE_CHECKING:
    from bot.agent.skills import Skills
    from bot.db import DatabaseRegistry
    from bot.state.audit import AuditLog
    from bot.state.executions import Executions
    from bot.state.grants import Grants

BOTH_MODES = frozenset({Mode.ASK, Mode.AGENT})
AGENT_ONLY = frozenset({Mode.AGENT})


class Parameters(BaseModel):
    """Base of every tool's parameters. Unknown keys are ignored: models add stray ones."""

    model_config = ConfigDict(extra="ignore")


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool may use while it runs, for one session."""

    session_id: str
    requester: Requester
    mode: Mode
    settings: Settings
    databases: DatabaseRegistry
    skills: Skills
    grants: Grants
    audit: AuditLog
    approver: str | None = None  # set while running a call an approver has just allowed
    executions: Executions | None = None  # write-ahead records of approved changes
    origin: str = ""  # "mcp:<client name>" for a call an MCP client made; audited with it
    call_id: str = ""  # the model's call being run: names its write-ahead record


@dataclass(frozen=True, slots=True)
class ToolReply:
    content: str  # what the model reads
    result: QueryResult | None = None  # a result set the answer may rest on
    summary: str = ""  # one line for an approval card: "3 rows affected", "Error: …"
    undo_id: str | None = None  # an approved change that can be undone exactly
    undo_reason: str = ""  # why an approved change has no undo


@dataclass(frozen=True, slots=True)
class ApprovalRequired:
    """The guard wants an approver's click before this statement runs."""

    database: str
    environment: str
    risk: str
    sql: str
    reason: str
    impact: Impact | None = None  # measured on the server before the card is posted
    role: str = ""  # the requester's database role it will run under ([databases.access])


@dataclass(frozen=True, slots=True)
class QuestionRequired:
    """The model asks the person something (ask_user); the run waits for the answer."""

    kind: str  # confirm | choose | input
    text: str
    options: tuple[tuple[str, str], ...]  # (label, value), cleaned


ToolOutcome = ToolReply | ApprovalRequired | QuestionRequired
Handler = Callable[[ToolContext, Any], Awaitable[ToolOutcome]]


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    parameters: type[Parameters]
    handler: Handler
    modes: frozenset[Mode]
    # May run alongside the turn's other calls: reads that need no approval.
    concurrent: bool = True
    # The line shown to the person while the tool runs, from its parsed arguments.
    progress: Callable[[Any], str] | None = None
    # Whether these arguments may change data (None: the tool never does). A run saves its
    # session before such a call, so that a restart knows a change was outstanding.
    may_write: Callable[[Any], bool] | None = None

    def spec(self) -> dict[str, Any]:
        """The tool as the chat completions API expects it."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": schema_of(self.parameters),
            },
        }


def schema_of(parameters: type[Parameters]) -> dict[str, Any]:
    """A parameter model's JSON schema as the tools are offered (inlined, no titles)."""
    return _clean_schema(parameters.model_json_schema())


def _inline(node: Any, definitions: dict[str, Any]) -> Any:
    """Nested models written out in place: some servers do not follow `$ref`."""
    if isinstance(node, list):
        return [_inline(item, definitions) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = definitions[ref.removeprefix("#/$defs/")]
        node = {**target, **{key: value for key, value in node.items() if key != "$ref"}}
    inlined = {key: _inline(value, definitions) for key, value in node.items() if key != "title"}
    if isinstance(node.get("properties"), dict):  # property names are not keywords
        inlined["properties"] = {
            name: _plain_property(_inline(value, definitions))
            for name, value in node["properties"].items()
        }
    return inlined


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's titles: noise for the model, and some servers reject unknown keys."""
    definitions = schema.get("$defs") or {}
    schema = _inline({k: v for k, v in schema.items() if k != "$defs"}, definitions)
    cleaned = {key: value for key, value in schema.items() if key != "title"}
    cleaned["properties"] = {
        name: _plain_property(prop) for name, prop in cleaned.get("properties", {}).items()
    }
    cleaned["type"] = "object"
    return cleaned


def _plain_property(prop: dict[str, Any]) -> dict[str, Any]:
    """`int | None = None` becomes a plain optional integer: some servers reject anyOf/null."""
    plain = {key: value for key, value in prop.items() if key != "title"}
    options = plain.pop("anyOf", None)
    if options is not None:
        kept = [option for option in options if option.get("type") != "null"]
        if len(kept) == 1:
            plain = {**kept[0], **plain}
        else:
            plain["anyOf"] = options
    if plain.get("default", "") is None:
        del plain["default"]
    return plain


def dumps(value: Any) -> str:
    """Compact JSON, the only format tools answer in."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def table(result: ResultSet, **extra: Any) -> dict[str, Any]:
    """A result set as columns plus rows of arrays (never one object per row)."""
    return {
        "columns": list(result.columns),
        "rows": [list(row) for row in result.rows],
        "row_count": result.row_count,
        "truncated": result.truncated,
        **extra,
    }


# Classifying is fast (tens of microseconds a statement), but a pasted dump of thousands of
# statements would hold the event loop for seconds: those go to a worker thread.
_CLASSIFY_INLINE_CHARS = 4_000


async def classify_sql(sql: str, limits: Limits) -> Classification | ToolReply:
    """The classification, or the reply refusing SQL too long to consider."""
    if len(sql) > limits.max_sql_chars:
        return error(
            f"the SQL is {len(sql):,} characters; the limit is {limits.max_sql_chars:,}. "
            "Send smaller statements."
        )
    if len(sql) <= _CLASSIFY_INLINE_CHARS:
        return classify(sql)
    return await asyncio.to_thread(classify, sql)


def may_write(sql: str) -> bool:
    """Whether `sql` may change data; long SQL is not classified here and is assumed to."""
    return len(sql) > _CLASSIFY_INLINE_CHARS or not classify(sql).is_read_only


def error(message: str) -> ToolReply:
    text = message if message.startswith(("Error:", "Blocked:")) else f"Error: {message}"
    return ToolReply(content=text, summary=text)
