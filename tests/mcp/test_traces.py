"""Traces of MCP calls: each call is one trace, rooted in an `mcp.call` span naming the tool
and the configured client, with the tool, the guard's decision and the statements under it —
and no argument, literal or row in any attribute."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from bot.observability import tracing
from tests.fakes.model_server import FakeModelServer
from tests.fakes.slack_server import FakeSlack
from tests.mcp.support import ALICE_TOKEN, CLIENT_NAME, http_session, json_of, with_mcp
from tests.slack.conftest import APPROVER, STAGING, SlackHarness

SQL = "SELECT id, status FROM orders WHERE status = 'pending' AND total > 5.25"
NEVER = [SQL, "pending", "5.25", "5.50", "12.00", ALICE_TOKEN]


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


@pytest.fixture
async def bot(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> AsyncIterator[SlackHarness]:
    harness = SlackHarness(slack, model, shop_url, tmp_path / "state")
    harness.settings = with_mcp(harness.settings, APPROVER)
    await harness.start()
    yield harness
    await harness.stop()


async def test_an_mcp_call_is_one_trace_without_a_literal(
    bot: SlackHarness, spans: InMemorySpanExporter
) -> None:
    async with http_session(f"{bot.url}/mcp") as session:
        rows = json_of(await session.call_tool("execute_query", {"database": STAGING, "sql": SQL}))
    assert rows["row_count"] == 2
    finished = list(spans.get_finished_spans())
    (root,) = [s for s in finished if s.parent is None]
    assert root.name == "mcp.call"
    assert dict(root.attributes or {}) == {
        "gen_ai.tool.name": "execute_query",
        "dbagent.mcp.client": CLIENT_NAME,
    }
    assert {s.context.trace_id for s in finished} == {root.context.trace_id}
    names = {s.name for s in finished}
    assert {"execute_tool execute_query", "dbagent.guard", "SELECT"} <= names
    for span in finished:
        for key, value in (span.attributes or {}).items():
            assert not any(secret in str(value) for secret in NEVER), (span.name, key, value)
