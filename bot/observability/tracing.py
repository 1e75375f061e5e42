"""OpenTelemetry traces, on when OTEL_EXPORTER_OTLP_ENDPOINT is set.

One trace per run of the agent (a Slack message, a click, an MCP call): a `dbagent.turn`
span, under it the model calls (GenAI semantic conventions: `chat <model>`), each tool call,
the guard's decision and each database statement. Attributes hold names, counts, risks and
decisions only: never SQL text, row values or secrets. Without the variable no provider is
installed and the spans cost next to nothing (OpenTelemetry's no-op tracer).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.util.types import AttributeValue

log = logging.getLogger(__name__)

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
TRACES_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
SERVICE_NAME_ENV = "OTEL_SERVICE_NAME"
TRACER_NAME = "dbagent"

_tracer: trace.Tracer | None = None  # None: tracing is off
_NO_SPAN = contextlib.nullcontext(trace.INVALID_SPAN)  # what a span is when tracing is off


def use_provider(provider: trace.TracerProvider | None) -> None:
    """Send this process's spans to `provider` (None: nowhere)."""
    global _tracer
    _tracer = None if provider is None else provider.get_tracer(TRACER_NAME)


def enabled() -> bool:
    """Whether spans are recorded (a provider is in use)."""
    return _tracer is not None


def span(
    name: str,
    *,
    kind: trace.SpanKind = trace.SpanKind.INTERNAL,
    attributes: Mapping[str, AttributeValue] | None = None,
) -> contextlib.AbstractContextManager[trace.Span]:
    """A span under the current one, made current for the block; with tracing off, one
    shared context that records nothing (no span, no context change: next to free)."""
    if _tracer is None:
        return _NO_SPAN
    return _tracer.start_as_current_span(name, kind=kind, attributes=attributes)


def start_from_environment() -> TracerProvider | None:
    """Export spans over OTLP/HTTP when an endpoint is configured; the provider, to shut down
    at exit, or None when tracing stays off."""
    if not (os.environ.get(ENDPOINT_ENV) or os.environ.get(TRACES_ENDPOINT_ENV)):
        return None
    # Imported here: the exporter's protobuf modules are only worth loading when used.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    resource = Resource.create({"service.name": os.environ.get(SERVICE_NAME_ENV, "dbagent")})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    use_provider(provider)
    log.info("traces go to %s over OTLP/HTTP", os.environ.get(ENDPOINT_ENV))
    return provider


@contextlib.contextmanager
def exporting() -> Iterator[None]:
    """Traces exported (when configured) while the block runs; the last spans sent at its end."""
    provider = start_from_environment()
    try:
        yield
    finally:
        if provider is not None:
            provider.shutdown()
