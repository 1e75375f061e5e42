"""Keeping tool results and history small."""

from __future__ import annotations

import json

from bot.agent import Agent, Answer, Outcome
from bot.agent.compaction import (
    EARLIER_LINES,
    KEPT_EXCHANGES,
    compact_text,
    estimate_tokens,
    fit_history,
    total_tokens,
)
from bot.agent.sessions import Session
from bot.config import Mode
from tests.agent.support import REQUESTER, SESSION, STAGING, AgentFactory
from tests.fakes.model_server import FakeModelServer, Turn, call, calls, say


def test_a_short_result_is_left_as_it_is() -> None:
    assert compact_text("short", 100) == "short"


def test_a_long_result_keeps_head_and_tail_around_a_note() -> None:
    text = "H" * 600 + "M" * 10_000 + "T" * 300
    compacted = compact_text(text, 900)
    assert compacted.startswith("H" * 600)
    assert compacted.endswith("T" * 300)
    assert f"[… {len(text) - 900} chars omitted …]" in compacted
    assert len(compacted) < 900 + 40


def test_a_compacted_table_still_states_its_row_count_and_truncation_at_the_end() -> None:
    rows = [[i, f"payload {i}"] for i in range(10_000)]
    table = json.dumps(
        {"columns": ["id", "payload"], "rows": rows, "row_count": 10_000, "truncated": True},
        separators=(",", ":"),
    )
    compacted = compact_text(table, 2_000)
    assert compacted.startswith('{"columns":["id","payload"],"rows":[[0,')
    assert compacted.endswith('"row_count":10000,"truncated":true}')


def conversation(old_result_chars: int) -> list[dict]:
    return [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "a", "function": {}}]},
        {"role": "tool", "tool_call_id": "a", "content": "A" * old_result_chars},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "second question"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "b", "function": {}}]},
        {"role": "tool", "tool_call_id": "b", "content": "B" * old_result_chars},
    ]


def test_history_within_budget_is_untouched() -> None:
    messages = conversation(100)
    before = json.dumps(messages)
    assert fit_history(messages, 10_000) == 0
    assert json.dumps(messages) == before


def test_history_over_budget_shrinks_the_oldest_tool_result_first() -> None:
    messages = conversation(8_000)
    original = messages[2]
    budget = total_tokens(messages) - 1_000
    assert fit_history(messages, budget) == 1
    assert "chars omitted" in messages[2]["content"]
    # A shrunk copy takes its place: a save tells what it must write by identity.
    assert messages[2] is not original and original["content"] == "A" * 8_000
    assert messages[6]["content"] == "B" * 8_000  # the current run's result stays whole
    assert total_tokens(messages) <= budget


def test_whole_old_exchanges_leave_together_so_no_tool_result_loses_its_call() -> None:
    messages = conversation(8_000)
    earlier: list[str] = []
    fit_history(messages, 10, earlier=earlier)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[0]["content"] == "second question"
    assert earlier == ["asked: first question → answered: first answer"]


def test_the_current_exchange_is_never_dropped_however_small_the_budget() -> None:
    messages = conversation(8_000)[4:]
    fit_history(messages, 1)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]


def test_every_remaining_tool_result_follows_the_call_it_answers() -> None:
    messages: list[dict] = []
    for n in range(50):
        messages += [
            {"role": "user", "content": f"question {n}"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{n}"}]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": "R" * 3_000},
            {"role": "assistant", "content": f"answer {n}"},
        ]
    fit_history(messages, 2_000)
    called: set[str] = set()
    for message in messages:
        called |= {c["id"] for c in message.get("tool_calls") or []}
        if message["role"] == "tool":
            assert message["tool_call_id"] in called
    assert messages[0]["role"] == "user"
    assert total_tokens(messages) <= 2_000


def test_cached_estimates_stay_in_step_with_the_messages_they_measure() -> None:
    messages = conversation(8_000)
    estimates: list[int] = []
    fit_history(messages, total_tokens(messages) - 1_000, estimates=estimates)
    assert estimates == [estimate_tokens(m) for m in messages]
    fit_history(messages, 10, estimates=estimates)
    assert estimates == [estimate_tokens(m) for m in messages]


def test_the_lines_for_dropped_exchanges_are_bounded() -> None:
    messages: list[dict] = []
    for n in range(100):
        messages += [
            {"role": "user", "content": f"question {n} " + "q" * 500},
            {"role": "assistant", "content": f"answer {n}"},
        ]
    earlier: list[str] = []
    fit_history(messages, 500, earlier=earlier)
    assert len(earlier) == EARLIER_LINES
    assert all(len(line) < 400 for line in earlier)
    assert earlier[-1].startswith(f"asked: question {100 - len(messages) // 2 - 1} ")


def test_tokens_are_estimated_at_about_four_characters_each() -> None:
    assert estimate_tokens("x" * 400) == 101


# -- through the real Agent ---------------------------------------------------------------


async def ask(agent: Agent, text: str) -> Outcome:
    return await agent.handle_message(SESSION, text, requester=REQUESTER, mode=Mode.AGENT)


def answer_after_a_tool(body: dict) -> Turn:
    if body["messages"][-1]["role"] == "tool":
        return say(f"answer to {body['messages'][-3]['content']}")
    return calls(call("get_current_time"))


async def test_a_long_thread_keeps_its_last_exchanges_and_names_the_older_ones(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent()
    model_server.responder = answer_after_a_tool
    for n in range(KEPT_EXCHANGES + 4):
        assert isinstance(await ask(agent, f"question {n}"), Answer)
    messages = model_server.last_request["messages"]
    users = [m["content"] for m in messages if m["role"] == "user"]
    assert users[1:] == [f"question {n}" for n in range(5, KEPT_EXCHANGES + 4)]
    called = {c["id"] for m in messages for c in m.get("tool_calls") or []}
    assert all(m["tool_call_id"] in called for m in messages if m["role"] == "tool")
    assert messages[1]["role"] == "user"  # the history starts with a person's message
    note = messages[1]["content"]
    assert note.startswith("[Earlier in this thread")
    assert "- asked: question 0 → answered: answer to question 0" in note
    assert "question 4 →" not in note and note.endswith("\n\nquestion 4")
    assert "asked: question 0" not in messages[0]["content"]  # never in the system prompt
    session = await agent.session(SESSION)
    assert session is not None
    # Estimated once each, when first fitted: the answer just given is measured next turn.
    assert session.token_estimates == [estimate_tokens(m) for m in session.messages[:-1]]


async def test_a_thread_far_past_its_budget_still_fits_the_model_request(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent()
    result = json.dumps({"rows": [["x" * 60] for _ in range(40)]})
    messages: list[dict] = []
    for n in range(400):  # 1.3 MB stored: more than the fake server accepts in one request
        messages += [
            {"role": "user", "content": f"question {n}"},
            {"role": "assistant", "content": None, "tool_calls": [_call(f"c{n}")]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": result},
            {"role": "assistant", "content": f"answer {n}"},
        ]
    await agent.sessions.save(Session(id=SESSION, mode=Mode.AGENT, messages=messages))
    model_server.responder = answer_after_a_tool
    assert isinstance(await ask(agent, "one more"), Answer)
    sent = max(len(json.dumps(body)) for body in model_server.requests)
    assert sent < 100_000


async def test_a_turn_saves_its_session_once_per_step_and_once_at_the_start(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent()
    statuses: list[str] = []
    save = agent.sessions.save

    async def counted(session: Session) -> None:  # the real save, counted
        statuses.append(session.status.value)
        await save(session)

    agent.sessions.save = counted  # type: ignore[method-assign]
    model_server.script(
        calls(call("get_current_time"), call("list_tables", {"database": STAGING})),
        calls(call("execute_query", {"database": STAGING, "sql": "SELECT 1"})),
        say("done"),
    )
    assert isinstance(await ask(agent, "go"), Answer)
    assert statuses == ["running", "running", "running", "idle"]


def _call(call_id: str) -> dict:
    arguments = json.dumps({"database": STAGING, "sql": "SELECT 1"})
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "execute_query", "arguments": arguments},
    }
