"""The loop: model → tools → results → … → answer, against the fake model server (streamed and
plain) and the real MariaDB."""

from __future__ import annotations

import json

from bot.agent import Agent, Answer, Failed, Outcome, Progress, SessionStatus, Step
from bot.config import Mode
from tests.agent.support import AGENT_TOOLS, BIG_ROWS, REQUESTER, SESSION, STAGING, AgentFactory
from tests.fakes.model_server import FakeModelServer, call, calls, failure, say

COUNT_BY_STATUS = "SELECT status, COUNT(*) AS n FROM orders GROUP BY status ORDER BY status"


async def ask(
    agent: Agent, text: str = "how many orders are pending?", progress: Progress | None = None
) -> Outcome:
    return await agent.handle_message(
        SESSION, text, requester=REQUESTER, mode=Mode.AGENT, progress=progress
    )


async def test_a_multi_step_exploration_lists_describes_queries_and_answers(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    model_server.script(
        calls(call("list_databases")),
        calls(call("list_tables", {"database": STAGING})),
        calls(call("get_columns", {"database": STAGING, "table": "orders"})),
        calls(call("execute_query", {"database": STAGING, "sql": COUNT_BY_STATUS})),
        say("2 orders are pending."),
    )
    progress: list[Step] = []

    async def note(step: Step) -> None:
        progress.append(step)

    outcome = await ask(await make_agent(), progress=note)

    assert outcome == Answer(text="2 orders are pending.", results=outcome.results)
    (result,) = outcome.results
    assert result.columns == ("status", "n")
    assert result.rows == (("paid", 1), ("pending", 2), ("shipped", 1))
    assert result.sql == COUNT_BY_STATUS and result.database == STAGING
    assert len(model_server.requests) == 5
    assert set(model_server.tools_offered(0)) == AGENT_TOOLS
    assert json.loads(model_server.new_tool_results(4)[0]) == {
        "columns": ["status", "n"],
        "rows": [["paid", 1], ["pending", 2], ["shipped", 1]],
        "row_count": 3,
        "truncated": False,
    }
    query_steps = [step for step in progress if step.title == "Running query on shop-staging"]
    assert [(step.status, step.details) for step in query_steps] == [
        ("in_progress", ""),
        ("complete", "3 rows returned"),
    ]
    assert len({step.id for step in query_steps}) == 1
    assert [step.title for step in progress if step.status == "in_progress"][:3] == [
        "Listing databases",
        "Listing tables in shop-staging",
        "Reading columns of orders in shop-staging",
    ]


async def test_the_system_prompt_leads_every_request(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    model_server.script(say("hello"))
    await ask(await make_agent())
    system, user = model_server.last_request["messages"]
    assert system["role"] == "system"
    assert "shop-staging (staging)" in system["content"]
    assert "Europe/Berlin" in system["content"]
    assert user == {"role": "user", "content": "how many orders are pending?"}


async def test_reads_in_one_turn_run_together_and_their_results_keep_call_order(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    model_server.script(
        calls(
            call("get_columns", {"database": STAGING, "table": "orders"}, id="c1"),
            call("get_current_time", id="c2"),
            call("get_columns", {"database": STAGING, "table": "customers"}, id="c3"),
            call("list_tables", {"database": STAGING}, id="c4"),
        ),
        say("done"),
    )
    await ask(await make_agent())
    results = model_server.tool_results()
    assert [r["tool_call_id"] for r in results] == ["c1", "c2", "c3", "c4"]
    assert '"customer_id"' in results[0]["content"]
    assert '"utc_time"' in results[1]["content"]
    assert '"country"' in results[2]["content"]


async def test_malformed_tool_arguments_go_back_to_the_model_which_can_retry(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    model_server.script(
        calls(call("list_tables", '{"database": "shop-sta')),
        calls(call("list_tables", {"db": STAGING})),
        calls(call("list_tables", {"database": STAGING})),
        say("3 tables."),
    )
    outcome = await ask(await make_agent())
    assert isinstance(outcome, Answer)
    assert model_server.new_tool_results(1)[0].startswith(
        "Error: invalid arguments: not valid JSON"
    )
    assert model_server.new_tool_results(2)[0] == (
        "Error: invalid arguments: database: Field required"
    )
    assert '"orders"' in model_server.new_tool_results(3)[0]


async def test_an_unknown_tool_is_answered_with_the_list_of_tools(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    model_server.script(calls(call("run_shell", {"cmd": "rm -rf /"})), say("Sorry."))
    outcome = await ask(await make_agent())
    assert outcome == Answer(text="Sorry.")
    assert model_server.new_tool_results()[0].startswith("Error: unknown tool 'run_shell'")


async def test_the_iteration_limit_stops_a_model_that_never_answers(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    model_server.script(*[calls(call("get_current_time"))] * 5)
    agent = await make_agent(max_iterations=3)
    outcome = await ask(agent)
    assert isinstance(outcome, Failed)
    assert "stopped after 3 model steps without a final answer" in outcome.message
    assert len(model_server.requests) == 3
    session = await agent.session(SESSION)
    assert session is not None and session.status is SessionStatus.FAILED


async def test_the_iteration_count_starts_again_with_each_message(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent(max_iterations=2)
    model_server.script(calls(call("get_current_time")), say("one"))
    assert await ask(agent) == Answer(text="one")
    model_server.script(calls(call("get_current_time")), say("two"))
    assert await ask(agent) == Answer(text="two")


async def test_a_ten_thousand_row_result_reaches_the_model_compacted(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    sql = "SELECT id, payload FROM events ORDER BY id"
    model_server.script(
        calls(call("execute_query", {"database": STAGING, "sql": sql, "limit": BIG_ROWS})),
        say("That is a lot of events."),
    )
    agent = await make_agent(max_rows=BIG_ROWS, tool_result_chars=4_000)
    outcome = await ask(agent)

    (seen,) = model_server.new_tool_results()
    assert len(seen) < 4_100
    assert "chars omitted …]" in seen
    assert seen.startswith('{"columns":["id","payload"],"rows":[[1,"event payload number 1"]')
    assert seen.endswith(f'"row_count":{BIG_ROWS},"truncated":false}}')
    # The person still gets every row (for the CSV).
    assert isinstance(outcome, Answer)
    assert len(outcome.results[0].rows) == BIG_ROWS


async def test_an_empty_model_response_fails_the_run_with_a_clear_message(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    model_server.script(say(""))
    outcome = await ask(await make_agent())
    assert outcome == Failed("the model sent an empty response (no text, no tool call)")


async def test_model_server_errors_are_retried_then_the_run_succeeds(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    model_server.fail_next(500, times=2)
    model_server.script(say("fine now"))
    assert await ask(await make_agent()) == Answer(text="fine now")
    assert len(model_server.requests) == 3


async def test_a_refused_api_key_fails_the_run_at_once_with_a_clear_error(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent()
    model_server.api_key = "a-different-key"
    outcome = await ask(agent)
    assert isinstance(outcome, Failed)
    assert "the model server refused the API key (401)" in outcome.message
    assert len(model_server.requests) == 1
    session = await agent.session(SESSION)
    assert session is not None and session.last_error == outcome.message


async def test_token_usage_accumulates_over_the_session(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    agent = await make_agent()
    model_server.script(calls(call("get_current_time")), say("one"))
    await ask(agent)
    first = await agent.session(SESSION)
    model_server.script(say("two"))
    await ask(agent)
    second = await agent.session(SESSION)
    assert first is not None and second is not None
    assert 0 < first.tokens_used < second.tokens_used


async def test_old_tool_results_shrink_first_when_history_outgrows_its_budget(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    big = "SELECT id, payload FROM events ORDER BY id"
    agent = await make_agent(history_token_budget=4_000, tool_result_chars=10_000)
    model_server.script(
        calls(call("execute_query", {"database": STAGING, "sql": big, "limit": 400})),
        say("Here are 400 events."),
    )
    await ask(agent, "show me events")
    assert len(model_server.new_tool_results()[0]) > 9_000  # whole within its own run
    model_server.script(say("Anything else?"))
    await ask(agent, "thanks")
    (old,) = [m["content"] for m in model_server.last_request["messages"] if m["role"] == "tool"]
    assert len(old) < 400
    assert "chars omitted …]" in old


async def test_rows_fetched_before_the_model_fails_are_still_in_the_outcome_with_their_sql(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    model_server.script(
        calls(call("execute_query", {"database": STAGING, "sql": COUNT_BY_STATUS})),
        failure(500),
        failure(500),
        failure(500),  # the client's two retries, then the run fails
    )
    outcome = await ask(await make_agent())
    assert isinstance(outcome, Failed)
    assert "HTTP 500" in outcome.message
    (result,) = outcome.results
    assert result.sql == COUNT_BY_STATUS and result.database == STAGING
    assert result.rows == (("paid", 1), ("pending", 2), ("shipped", 1))


async def test_rows_fetched_before_the_iteration_limit_are_still_in_the_outcome(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    model_server.script(
        calls(call("execute_query", {"database": STAGING, "sql": COUNT_BY_STATUS})),
        calls(call("get_current_time")),
    )
    outcome = await ask(await make_agent(max_iterations=2))
    assert isinstance(outcome, Failed) and "limit is 2" in outcome.message
    assert [result.sql for result in outcome.results] == [COUNT_BY_STATUS]


async def test_a_change_shows_its_step_then_waiting_for_approval(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    update = "UPDATE orders SET status = 'paid' WHERE id = 11"
    model_server.script(calls(call("execute_query", {"database": STAGING, "sql": update})))
    steps: list[Step] = []

    async def note(step: Step) -> None:
        steps.append(step)

    await ask(await make_agent(), "pay 11", progress=note)
    assert [(step.title, step.status) for step in steps] == [
        ("Running query on shop-staging", "in_progress"),
        ("Waiting for approval", "in_progress"),
    ]
    assert steps[1].details == f"write on {STAGING}"


async def test_a_failing_tool_step_ends_in_error_with_the_reason(
    make_agent: AgentFactory, model_server: FakeModelServer
) -> None:
    model_server.script(
        calls(call("get_columns", {"database": STAGING, "table": "no_such_table"})),
        say("There is no such table."),
    )
    steps: list[Step] = []

    async def note(step: Step) -> None:
        steps.append(step)

    await ask(await make_agent(), "columns?", progress=note)
    assert steps[-1].status == "error"
    assert steps[-1].details.startswith("Error:")
