"""Traces: one turn is one trace — the turn, its model calls, its tool call with the guard's
decision and the database statements under it — and no attribute holds a literal, a row value,
the person's words or a secret."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from bot.observability import tracing
from tests.fakes.model_server import call, calls, say
from tests.slack.conftest import BOT_TOKEN, SIGNING_SECRET, STAGING, SlackHarness

QUESTION = "which orders of Ada & Co are still pending?"
SQL = "SELECT id, customer, total FROM orders WHERE status = 'pending' AND total > 5.25"
# What must never reach a span: the SQL and its literals, the rows it returns (see the shop
# in tests/slack/conftest.py), the person's words, the credentials.
NEVER = [
    SQL,
    "pending",
    "5.25",
    "Ada",
    "Linus",
    "5.50",
    "12.00",
    "still pending",
    BOT_TOKEN,
    SIGNING_SECRET,
    "test-key",
]


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use_provider(provider)
    try:
        yield exporter
    finally:
        tracing.use_provider(None)
        provider.shutdown()


def children(of: ReadableSpan, among: list[ReadableSpan]) -> list[ReadableSpan]:
    return [s for s in among if s.parent is not None and s.parent.span_id == of.context.span_id]


async def test_one_turn_is_one_trace_without_a_literal_in_it(
    harness: SlackHarness, spans: InMemorySpanExporter
) -> None:
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": SQL})),
        say("Orders 11 and 12 are pending."),
    )
    thread_ts, _ = await harness.mention(QUESTION)
    await harness.slack.wait_for(lambda: any("are pending" in t for t in harness.texts(thread_ts)))
    await harness.settled()
    finished = list(spans.get_finished_spans())

    (turn,) = [s for s in finished if s.parent is None]
    assert turn.name == "dbagent.turn"
    assert {s.context.trace_id for s in finished} == {turn.context.trace_id}
    assert turn.attributes is not None and turn.attributes["dbagent.outcome"] == "answer"
    under_turn = children(turn, finished)
    assert [s.name for s in under_turn] == [
        "chat fake-model",
        "execute_tool execute_query",
        "chat fake-model",
    ]
    first_model_call = under_turn[0]
    assert first_model_call.attributes is not None
    assert first_model_call.attributes["gen_ai.operation.name"] == "chat"
    assert first_model_call.attributes["gen_ai.request.model"] == "fake-model"
    assert int(str(first_model_call.attributes["gen_ai.usage.input_tokens"])) > 0
    tool = under_turn[1]
    under_tool = children(tool, finished)
    (guard,) = [s for s in under_tool if s.name == "dbagent.guard"]
    assert guard.attributes is not None
    assert dict(guard.attributes) == {"dbagent.risk": "read_only", "dbagent.decision": "run"}
    statements = [s for s in under_tool if s.name == "SELECT"]
    assert statements, [s.name for s in under_tool]
    assert all(s.attributes and s.attributes["db.operation.name"] == "SELECT" for s in statements)
    assert any(s.attributes and s.attributes["dbagent.database"] == STAGING for s in statements)

    for span in finished:
        for key, value in (span.attributes or {}).items():
            shown = str(value)
            assert not any(secret in shown for secret in NEVER), (span.name, key, shown)
        assert not any(secret in span.name for secret in NEVER), span.name


async def test_a_refused_statement_names_its_class_not_its_reason(
    harness: SlackHarness, spans: InMemorySpanExporter
) -> None:
    harness.model.script(
        calls(call("execute_query", {"database": "shop-prod", "sql": "DELETE FROM orders"})),
        say("Not in production."),
    )
    thread_ts, _ = await harness.mention("delete every order in production")
    await harness.slack.wait_for(lambda: any("Not in" in t for t in harness.texts(thread_ts)))
    await harness.settled()
    (guard,) = [s for s in spans.get_finished_spans() if s.name == "dbagent.guard"]
    assert guard.attributes is not None
    assert dict(guard.attributes) == {
        "dbagent.risk": "write",
        "dbagent.decision": "refused",
        "dbagent.refusal_class": "production_write",
    }
