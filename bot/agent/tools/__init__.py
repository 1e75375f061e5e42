"""The tool registry: name → Tool (schema + handler). `prepare` judges a model's call
(known tool? allowed in this mode? valid arguments?) and `run` executes it; both answer
problems as text for the model, never as exceptions."""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from bot.agent.tools.ask_user import ASK_USER_TOOLS
from bot.agent.tools.base import (
    ApprovalRequired,
    Parameters,
    QuestionRequired,
    Tool,
    ToolContext,
    ToolOutcome,
    ToolReply,
    error,
)
from bot.agent.tools.catalog import CATALOG_TOOLS
from bot.agent.tools.clock import CLOCK_TOOLS
from bot.agent.tools.explain import EXPLAIN_TOOLS
from bot.agent.tools.query import QUERY_TOOLS
from bot.agent.tools.sample import SAMPLE_TOOLS
from bot.agent.tools.skill import SKILL_TOOLS
from bot.agent.turns import ToolCall
from bot.config import Mode
from bot.db.types import DbError
from bot.observability import observe

log = logging.getLogger(__name__)

TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        *CATALOG_TOOLS,
        *CLOCK_TOOLS,
        *SKILL_TOOLS,
        *QUERY_TOOLS,
        *SAMPLE_TOOLS,
        *EXPLAIN_TOOLS,
        *ASK_USER_TOOLS,
    )
}


def tools_for(mode: Mode) -> list[Tool]:
    return [tool for tool in TOOLS.values() if mode in tool.modes]


@functools.cache
def _specs(mode: Mode) -> tuple[dict[str, Any], ...]:
    # Generating JSON schemas costs milliseconds per tool: do it once per mode, not per call.
    return tuple(tool.spec() for tool in tools_for(mode))


def specs_for(mode: Mode) -> list[dict[str, Any]]:
    """The mode's tools as the chat completions API expects them (shared: don't mutate)."""
    return list(_specs(mode))


@dataclass(frozen=True, slots=True)
class PreparedCall:
    call: ToolCall
    tool: Tool
    arguments: Parameters

    @property
    def progress(self) -> str:
        return self.tool.progress(self.arguments) if self.tool.progress else ""


def prepare(call: ToolCall, mode: Mode) -> PreparedCall | ToolReply:
    """The call ready to run, or the reply that tells the model what was wrong with it."""
    tool = TOOLS.get(call.name)
    if tool is None:
        names = ", ".join(t.name for t in tools_for(mode))
        return error(f"unknown tool {call.name!r}; the tools are: {names}")
    if mode not in tool.modes:
        return error(
            f"Blocked: {call.name} is not available in {mode.value} mode; nothing is executed "
            "in this conversation. Show the SQL to the user in a ```sql code block instead."
        )
    raw = call.arguments.strip() or "{}"
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        return error(
            f"invalid arguments: not valid JSON ({exc.msg} at character {exc.pos}); "
            "send one JSON object with the tool's parameters"
        )
    if not isinstance(data, dict):
        return error(f"invalid arguments: expected a JSON object, got {type(data).__name__}")
    try:
        arguments = tool.parameters.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in problem['loc']) or 'arguments'}: {problem['msg']}"
            for problem in exc.errors(include_url=False, include_input=False)
        )
        return error(f"invalid arguments: {problems}")
    return PreparedCall(call, tool, arguments)


@observe.tool_call
async def run(prepared: PreparedCall, context: ToolContext) -> ToolOutcome:
    try:
        return await prepared.tool.handler(context, prepared.arguments)
    except DbError as exc:
        return error(exc.message)
    except Exception:
        # A bug of ours: the model hears a short sentence, the log gets the traceback.
        log.exception("tool %s failed", prepared.tool.name)
        return error(f"{prepared.tool.name} failed inside dbagent; the details are in its log")


__all__ = [
    "TOOLS",
    "ApprovalRequired",
    "PreparedCall",
    "QuestionRequired",
    "Tool",
    "ToolContext",
    "ToolOutcome",
    "ToolReply",
    "prepare",
    "run",
    "specs_for",
    "tools_for",
]
