"""Model output bounds: an oversized tool-call argument is refused to the model and never kept
in the thread's history, so the thread goes on working."""

from __future__ import annotations

import json

import pytest

from bot.agent import Answer
from bot.agent.turns import ModelTurn, ToolCall, bound_arguments, refused_arguments
from bot.config import Mode
from tests.agent.support import REQUESTER, SESSION, STAGING, AgentFactory
from tests.fakes.model_server import FakeModelServer, call, calls, say

LIMIT = 1_000


@pytest.mark.parametrize(
    ("arguments", "refused", "reason"),
    [
        ({"database": "db", "sql": "SELECT 1"}, False, "small arguments pass untouched"),
        ({"database": "db", "sql": "x" * LIMIT}, False, "an argument at the limit fits"),
        ({"database": "db", "sql": "x" * (LIMIT + 1)}, True, "one argument over the limit"),
        ({"table": "t" * (LIMIT * 3)}, True, "any argument, not only SQL"),
        ('{"sql": "' + "y" * (LIMIT * 3), True, "too long to fit, even as broken JSON"),
        ({"a": "x" * 600, "b": "y" * 600}, False, "several arguments each within the limit"),
    ],
)
def test_oversized_arguments_are_replaced_by_a_placeholder(
    arguments: object, refused: bool, reason: str
) -> None:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    turn = ModelTurn(text="", tool_calls=(ToolCall(id="c1", name="t", arguments=raw),))
    (kept,) = bound_arguments(turn, LIMIT).tool_calls
    assert (kept.arguments != raw) is refused, reason
    assert (refused_arguments(kept) is not None) is refused, reason
    if refused:
        assert len(kept.arguments) < 200
        assert json.loads(kept.arguments)  # still JSON, as providers expect


def test_a_real_argument_that_mentions_the_placeholder_key_is_not_a_refusal() -> None:
    raw = json.dumps({"database": "db", "sql": "SELECT 'refused_arguments'"})
    assert refused_arguments(ToolCall(id="c1", name="execute_query", arguments=raw)) is None


async def test_an_oversized_sql_argument_is_refused_and_the_thread_keeps_working(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent(max_sql_chars=10_000)
    model_server.fragment_chars = 50_000  # a big argument in few chunks
    huge = "SELECT " + " + ".join(["1"] * 200_000)  # 800 KB of SQL
    model_server.script(
        calls(call("execute_query", {"database": STAGING, "sql": huge})),
        say("That was too long; I will not run it."),
    )
    outcome = await agent.handle_message(
        SESSION, "add it all up", requester=REQUESTER, mode=Mode.AGENT
    )
    assert isinstance(outcome, Answer)
    (result,) = model_server.new_tool_results()
    assert result.startswith("Error: the arguments of this execute_query call were ")
    assert "nothing was run" in result
    session = await agent.session(SESSION)
    assert session is not None
    stored = json.dumps(session.to_json())
    assert len(stored) < 5_000  # the 800 KB argument is not kept

    model_server.script(say("Hello again."))
    again = await agent.handle_message(SESSION, "hi", requester=REQUESTER, mode=Mode.AGENT)
    assert again == Answer(text="Hello again.")
    assert len(json.dumps(model_server.last_request)) < 20_000


async def test_a_refused_call_after_an_approval_pause_is_still_refused(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent(max_sql_chars=10_000)
    model_server.fragment_chars = 50_000
    update = "UPDATE orders SET status = 'paid' WHERE id = 11"
    model_server.script(
        calls(
            call("execute_query", {"database": STAGING, "sql": update}),
            call("get_columns", {"database": STAGING, "table": "o" * 50_000}),
        ),
    )
    outcome = await agent.handle_message(SESSION, "pay 11", requester=REQUESTER, mode=Mode.AGENT)
    model_server.script(say("Denied, and the other call was too long."))
    await agent.deny(outcome.pending.id, approver="U0APPROVE")  # type: ignore[union-attr]
    results = model_server.new_tool_results()
    assert results[0].startswith("denied by U0APPROVE")
    assert results[1].startswith("Error: the arguments of this get_columns call were 50,")
