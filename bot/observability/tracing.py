"""OpenTelemetry traces, on when OTEL_EXPORTER_OTLP_ENDPOINT is set.

One trace per run of the agent (a Slack message, a click, an MCP call): a `dbagent.turn`
span, under it the model calls (GenAI semantic conventions: `chat <model>`), each tool call,
the guard's decision and each database statement. Attributes hold names, counts, risks and
decisions only: never SQL text, row values or secrets. Without the variable no provider is
installed and the spans cost next to nothing (OpenTelemetry's no-op tracer).
"""

from __future__ import annotations

import logging
import os

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

log = logging.getLogger(__name__)

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
TRACES_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
SERVICE_NAME_ENV = "OTEL_SERVICE_NAME"
TRACER_NAME = "dbagent"

_provider: trace.TracerProvider | None = None


def use_provider(provider: trace.TracerProvider | None) -> None:
    """Send this process's spans to `provider` (None: OpenTelemetry's global one)."""
    global _provider
    _provider = provider


def enabled() -> bool:
    """Whether spans are recorded anywhere (else the tracer is OpenTelemetry's no-op one)."""
    source = _provider if _provider is not None else trace.get_tracer_provider()
    return isinstance(source, TracerProvider)


def tracer() -> trace.Tracer:
    source = _provider if _provider is not None else trace.get_tracer_provider()
    return source.get_tracer(TRACER_NAME)


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
