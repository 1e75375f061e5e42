"""GET /metrics: the Prometheus text of this process, or of every worker of `serve --workers N`.

In multiprocess mode (PROMETHEUS_MULTIPROC_DIR set, as `serve --workers N` does) a scrape
reads every worker's samples from that directory; otherwise it reads this process's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from bot.observability import metrics
from bot.observability.multiprocess import multiprocess_dir

log = logging.getLogger(__name__)

METRICS_PATH = "/metrics"

# The creation times (epoch seconds) of the approvals waiting now.
Waiting = Callable[[], Awaitable[Iterable[float]]]


def render() -> bytes:
    """The text exposition: every worker's samples in multiprocess mode, else this process's."""
    if multiprocess_dir() is None:
        return generate_latest(REGISTRY)
    registry = CollectorRegistry()
    MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return generate_latest(registry)


def metrics_handler(waiting: Waiting) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The GET /metrics handler; `waiting` reads the pending approvals from the store, so the
    gauge is right whichever worker answers the scrape."""

    async def serve_metrics(request: web.Request) -> web.StreamResponse:
        try:
            metrics.pending_approvals(await waiting())
        except Exception as exc:  # the store is down: the rest of the metrics still matter
            log.warning("pending approvals not read for /metrics: %s", exc)
        body = await asyncio.to_thread(render)
        response = web.Response(body=body)
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    return serve_metrics
