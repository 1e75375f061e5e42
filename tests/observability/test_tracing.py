"""Traces leave the process over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set (a local
collector receives them), and not at all without it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from bot.observability import observe, tracing
from tests.fakes.local import serve_locally


class Collector:
    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []

    async def traces(self, request: web.Request) -> web.Response:
        assert request.content_type == "application/x-protobuf"
        exported = ExportTraceServiceRequest()
        exported.ParseFromString(await request.read())
        self.requests.append(exported)
        return web.Response(body=b"", content_type="application/x-protobuf")

    def span_names(self) -> list[str]:
        return [
            span.name
            for request in self.requests
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]


@pytest.fixture
async def collector() -> AsyncIterator[tuple[Collector, str]]:
    receiver = Collector()
    app = web.Application()
    app.router.add_post("/v1/traces", receiver.traces)
    runner, port = await serve_locally(app)
    yield receiver, f"http://127.0.0.1:{port}"
    await runner.cleanup()


async def test_spans_are_exported_to_the_configured_endpoint(
    collector: tuple[Collector, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    receiver, endpoint = collector
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "dbagent-under-test")
    provider = tracing.start_from_environment()
    assert provider is not None and tracing.enabled()
    try:
        with observe.span("mcp.call", **{"gen_ai.tool.name": "list_tables"}):
            pass
    finally:
        await asyncio.to_thread(provider.shutdown)  # flushes the batch
        tracing.use_provider(None)
    assert receiver.span_names() == ["mcp.call"]
    [request] = receiver.requests
    service = {a.key: a.value.string_value for a in request.resource_spans[0].resource.attributes}
    assert service["service.name"] == "dbagent-under-test"


def test_without_an_endpoint_nothing_is_set_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    assert tracing.start_from_environment() is None
    assert not tracing.enabled()
