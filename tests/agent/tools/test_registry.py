"""The tool registry: names, schemas from pydantic, modes, and calls judged before they run."""

from __future__ import annotations

import dataclasses

import pytest

from bot.agent import tools
from bot.agent.tools import ToolContext
from bot.config import Mode
from tests.agent.support import AGENT_TOOLS, ASK_TOOLS, reply_of


def parameters(name: str) -> dict:
    return tools.TOOLS[name].spec()["function"]["parameters"]


def test_agent_mode_offers_the_eight_design_tools_and_ask_user() -> None:
    assert sorted(t.name for t in tools.tools_for(Mode.AGENT)) == sorted(AGENT_TOOLS)


def test_ask_mode_offers_only_the_metadata_tools_and_ask_user() -> None:
    assert sorted(t.name for t in tools.tools_for(Mode.ASK)) == sorted(ASK_TOOLS)


@pytest.mark.parametrize(
    ("name", "properties", "required"),
    [
        ("list_databases", [], []),
        ("list_tables", ["database"], ["database"]),
        ("get_columns", ["database", "table"], ["database", "table"]),
        ("get_current_time", [], []),
        ("get_skill", ["name"], []),
        ("execute_query", ["database", "sql", "limit", "chart"], ["database", "sql"]),
        ("get_sample_data", ["database", "table", "limit"], ["database", "table"]),
        ("explain_query", ["database", "sql"], ["database", "sql"]),
        ("ask_user", ["kind", "question", "options"], ["kind", "question"]),
    ],
)
def test_each_tool_has_exactly_the_design_parameters(
    name: str, properties: list[str], required: list[str]
) -> None:
    schema = parameters(name)
    assert schema["type"] == "object"
    assert list(schema["properties"]) == properties
    assert schema.get("required", []) == required


def test_optional_parameters_are_plain_types_without_null_unions_or_titles() -> None:
    limit = parameters("execute_query")["properties"]["limit"]
    assert limit["type"] == "integer"
    assert "anyOf" not in limit and "title" not in limit and "default" not in limit
    assert "title" not in parameters("execute_query")


@pytest.fixture
def ask_context(tool_context: ToolContext) -> ToolContext:
    return dataclasses.replace(tool_context, mode=Mode.ASK)


@pytest.mark.parametrize("name", ["execute_query", "get_sample_data", "explain_query"])
async def test_a_data_tool_called_in_ask_mode_anyway_is_refused(
    ask_context: ToolContext, name: str
) -> None:
    reply = await reply_of(ask_context, name, {"database": "shop-staging", "sql": "SELECT 1"})
    assert reply.content.startswith(f"Blocked: {name} is not available in ask mode")


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"database": ', "Error: invalid arguments: not valid JSON"),
        ("[1, 2]", "Error: invalid arguments: expected a JSON object, got list"),
        ("{}", "Error: invalid arguments: database: Field required"),
        ('{"database": 5}', "Error: invalid arguments: database: Input should be a valid string"),
    ],
)
async def test_malformed_arguments_come_back_as_a_tool_result(
    tool_context: ToolContext, arguments: str, problem: str
) -> None:
    reply = await reply_of(tool_context, "list_tables", arguments)
    assert reply.content.startswith(problem)


async def test_a_limit_below_one_is_an_invalid_argument(tool_context: ToolContext) -> None:
    reply = await reply_of(
        tool_context, "execute_query", {"database": "shop-staging", "sql": "SELECT 1", "limit": 0}
    )
    assert reply.content.startswith("Error: invalid arguments: limit: Input should be greater")


async def test_an_unknown_tool_gets_the_list_of_tools(tool_context: ToolContext) -> None:
    reply = await reply_of(tool_context, "drop_everything")
    assert reply.content.startswith("Error: unknown tool 'drop_everything'; the tools are: ")
    assert "execute_query" in reply.content


async def test_empty_arguments_count_as_an_empty_object(tool_context: ToolContext) -> None:
    reply = await reply_of(tool_context, "get_current_time", "")
    assert '"utc_time"' in reply.content


async def test_stray_arguments_are_ignored(tool_context: ToolContext) -> None:
    reply = await reply_of(tool_context, "get_skill", {"name": "query", "verbose": True})
    assert reply.content.startswith("# Query")
