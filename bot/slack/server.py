"""Serving: Socket Mode when SLACK_APP_TOKEN is set, else HTTP on PORT at /slack/events.

HTTP requests must carry a valid Slack signature (v0, at most five minutes old): anything
else gets 401 and does nothing. GET /health answers 200 while the state store can be used
(bot/health.py), and lists the channels Slack says the bot cannot reach. GET /metrics answers
the Prometheus text. Both are served on PORT in Socket Mode too (`add_service_routes`, for
both modes).

SIGTERM (or SIGINT) stops taking events, lets running turns finish for up to
`[slack] shutdown_grace_s`, then exits; a second signal exits at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
from collections.abc import Mapping
from typing import TYPE_CHECKING

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import ConfigError, Settings
from bot.health import health_report
from bot.mcp.http import MCP_PATH, add_mcp_routes
from bot.observability import tracing
from bot.observability.exposition import METRICS_PATH, metrics_handler
from bot.slack import payloads
from bot.slack.app import build_app, services_of_app
from bot.slack.listeners.actions.stop_run import listen_for_forwarded_stops
from bot.slack.recovery import take_up, tell_interrupted, watch_expired_leases
from bot.slack.sessions import SessionQueues
from bot.slack.web_api import api_session, make_client
from bot.state import State, open_state
from bot.workers import WORKER_ENV

if TYPE_CHECKING:
    from bot.agent import Agent, ModelClient
    from bot.agent.outcomes import Recovered
    from bot.db import DatabaseRegistry

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/health"
# After the grace period (or a second signal), what is still running gets this long to
# tidy up (delete its status line) once cancelled.
CANCEL_TIDY_S = 2.0
MAX_BODY_BYTES = 1024 * 1024
PENDING_SEEN = 1000  # the most pending approvals /metrics counts


def build_web_app(app: AsyncApp) -> web.Application:
    """The aiohttp application for HTTP mode: POST /slack/events (events and
    interactivity), and the service routes (`add_service_routes`)."""
    secret = services_of_app(app).settings.slack_signing_secret
    if secret is None or not secret.get_secret_value():
        raise ConfigError(
            "SLACK_SIGNING_SECRET is not set (the signing secret from the Slack app's Basic "
            "Information page; HTTP mode needs it to check requests)"
        )
    verifier = SignatureVerifier(secret.get_secret_value())

    async def events(request: web.Request) -> web.StreamResponse:
        body = await request.text()
        # Checked here as well as in Bolt, so an unsigned body is refused before parsing.
        if not _signed(verifier, body, request.headers):
            return web.json_response({"error": "invalid signature"}, status=401)
        why = payloads.problem(body, request.content_type)
        if why is not None:
            log.warning("signed request with a malformed body refused: %s", why)
            return web.json_response({"error": "malformed body"}, status=400)
        try:
            bolt_request = await to_bolt_request(request)
            response = await app.async_dispatch(bolt_request)
        except Exception as exc:  # a shape the check above did not foresee: still one line
            log.warning("signed request Bolt could not read refused: %r", exc)
            return web.json_response({"error": "malformed body"}, status=400)
        return await to_aiohttp_response(response)

    web_app = web.Application(client_max_size=MAX_BODY_BYTES)
    web_app.router.add_post(EVENTS_PATH, events)
    add_service_routes(web_app, app)
    return web_app


def add_service_routes(web_app: web.Application, app: AsyncApp) -> None:
    """GET /health, GET /metrics and the MCP endpoint, on the HTTP mode's application and on
    Socket Mode's own small one alike."""
    state = services_of_app(app).state

    async def health(request: web.Request) -> web.StreamResponse:
        unreachable = getattr(services_of_app(app).client, "unreachable", {})
        status, body = await health_report(state, unreachable)
        return web.json_response(body, status=status)

    async def waiting() -> list[float]:
        return [float(r.get("created_at") or 0) for r in await state.pending.waiting(PENDING_SEEN)]

    web_app.router.add_get(HEALTH_PATH, health)
    web_app.router.add_get(METRICS_PATH, metrics_handler(waiting))
    add_mcp_routes(web_app, services_of_app(app))


_TIMESTAMP = re.compile(r"[0-9]{1,12}")


def _signed(verifier: SignatureVerifier, body: str, headers: Mapping[str, str]) -> bool:
    """Whether the request carries a valid Slack signature. A timestamp that is not a
    number (empty, words, other scripts' digits) or a signature the check cannot compare
    (non-ASCII) is refused with one log line, never an exception."""
    timestamp = headers.get("X-Slack-Request-Timestamp")
    signature = headers.get("X-Slack-Signature")
    if timestamp is None or signature is None:
        return False
    if not _TIMESTAMP.fullmatch(timestamp) or not signature.isascii():
        log.warning("request with a malformed Slack timestamp or signature header refused")
        return False
    try:
        return verifier.is_valid(body=body, timestamp=timestamp, signature=signature)
    except (ValueError, TypeError) as exc:  # whatever else the check cannot read
        log.warning("request whose signature could not be checked refused: %r", exc)
        return False


def service_app(app: AsyncApp) -> web.Application:
    """Socket Mode's HTTP application on PORT: /health, /metrics and /mcp (events come over
    the socket)."""
    web_app = web.Application(client_max_size=MAX_BODY_BYTES)
    add_service_routes(web_app, app)
    return web_app


async def _listen(web_app: web.Application, port: int) -> web.AppRunner:
    runner = web.AppRunner(web_app, access_log=None)
    await runner.setup()
    try:
        # Workers of `serve --workers N` share the port (the kernel spreads requests).
        shared = WORKER_ENV in os.environ
        await web.TCPSite(runner, "0.0.0.0", port, reuse_port=shared).start()
    except OSError as exc:
        await runner.cleanup()
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise ConfigError(f"cannot listen on port {port}: {reason} (set PORT)") from None
    return runner


def _check_credentials(settings: Settings) -> None:
    if settings.slack_bot_token is None or not settings.slack_bot_token.get_secret_value():
        raise ConfigError(
            "SLACK_BOT_TOKEN is not set (the bot token, xoxb-…, from the Slack app's "
            "OAuth & Permissions page)"
        )
    socket_mode = settings.slack_app_token and settings.slack_app_token.get_secret_value()
    secret = settings.slack_signing_secret
    if not socket_mode and (secret is None or not secret.get_secret_value()):
        raise ConfigError(
            "SLACK_SIGNING_SECRET is not set (needed in HTTP mode; or set SLACK_APP_TOKEN, "
            "xapp-…, for Socket Mode)"
        )


async def _build_agent(
    settings: Settings, state: State
) -> tuple[Agent, DatabaseRegistry, ModelClient, list[Recovered]]:
    # Imported here: `python -m bot` reports missing credentials before loading them.
    from bot.app import build_app as build_parts

    # Recovery included: changes stopped while they ran, to tell; runs cut off, to resume
    # or report.
    parts = await build_parts(settings, state=state)
    return parts.agent, parts.databases, parts.model, parts.interrupted


_SIGNALS = (signal.SIGTERM, signal.SIGINT)


async def _verify_bot_token(client: AsyncWebClient) -> None:
    """Fail at start on a token Slack refuses; carry on (and log) when Slack is out of reach,
    since events cannot arrive then anyway and the token is checked again on the first."""
    try:
        identity = await client.auth_test()
    except SlackApiError as exc:
        raise ConfigError(f"Slack refused SLACK_BOT_TOKEN ({exc.response.get('error')})") from None
    except (SlackClientError, OSError, TimeoutError) as exc:
        log.warning("cannot reach Slack to check SLACK_BOT_TOKEN: %s", exc)
        return
    log.info("signed in to Slack as %s in %s", identity.get("user"), identity.get("team"))


def _stop_on_signals(stop: asyncio.Event, hurry: asyncio.Event) -> None:
    """The first signal sets `stop`; any later one sets `hurry` (exit at once)."""
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        if stop.is_set():
            log.warning("second stop signal: exiting now")
            hurry.set()
        stop.set()

    for sig in _SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, on_signal)


async def _finish_turns(queues: SessionQueues, grace_s: float, hurry: asyncio.Event) -> None:
    """Wait for the running and queued turns, at most `grace_s` or until `hurry`; then cancel
    the rest (runs cut short are marked interrupted at the next start)."""
    drained = asyncio.ensure_future(queues.drain())
    hurried = asyncio.ensure_future(hurry.wait())
    await asyncio.wait({drained, hurried}, timeout=grace_s, return_when=asyncio.FIRST_COMPLETED)
    hurried.cancel()
    if not drained.done():
        drained.cancel()
        log.warning("turns still running after the grace period are cancelled")
        await queues.cancel(within_s=0.0 if hurry.is_set() else CANCEL_TIDY_S)


def _forget_signals() -> None:
    loop = asyncio.get_running_loop()
    for sig in _SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(sig)


async def serve(settings: Settings) -> None:
    """Serve Slack until SIGTERM or SIGINT. Missing credentials raise ConfigError."""
    _check_credentials(settings)
    traces = tracing.start_from_environment()
    state = await open_state(settings)
    session = api_session()
    databases: DatabaseRegistry | None = None
    model: ModelClient | None = None
    runner: web.AppRunner | None = None
    socket_handler = None
    stop, hurry = asyncio.Event(), asyncio.Event()
    _stop_on_signals(stop, hurry)
    app: AsyncApp | None = None
    forwarded_stops: asyncio.Task[None] | None = None
    lease_watch: asyncio.Task[None] | None = None
    try:
        agent, databases, model, interrupted = await _build_agent(settings, state)
        client = make_client(settings, session=session)
        await _verify_bot_token(client)
        app = build_app(settings, agent, state, client)
        services = services_of_app(app)
        await tell_interrupted(services, interrupted)
        take_up(services, interrupted)
        state.start_pruning()
        forwarded_stops = asyncio.create_task(
            listen_for_forwarded_stops(services), name="forwarded stops"
        )
        lease_watch = asyncio.create_task(watch_expired_leases(services), name="lease watch")
        app_token = settings.slack_app_token.get_secret_value() if settings.slack_app_token else ""
        if app_token:
            from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

            runner = await _listen(service_app(app), settings.port)
            socket_handler = AsyncSocketModeHandler(app, app_token)
            try:
                await socket_handler.connect_async()
            except SlackApiError as exc:
                raise ConfigError(
                    f"Slack refused SLACK_APP_TOKEN ({exc.response.get('error')}); it must be "
                    "an app-level token (xapp-…) with the connections:write scope"
                ) from None
            log.info(
                "dbagent is serving Slack over Socket Mode; /health and /metrics on port %d",
                settings.port,
            )
            if settings.mcp.enabled:
                log.info("dbagent is serving MCP on port %d at %s", settings.port, MCP_PATH)
        else:
            runner = await _listen(build_web_app(app), settings.port)
            log.info(
                "dbagent is serving Slack over HTTP on port %d at %s", settings.port, EVENTS_PATH
            )
        await stop.wait()
        log.info(
            "stopping: no new events; running turns get %.0f s to finish",
            settings.slack.shutdown_grace_s,
        )
    finally:
        # No new events: Slack redelivers what it could not hand over to the next process.
        if socket_handler is not None:
            await socket_handler.close_async()
        if runner is not None:
            await runner.cleanup()
        if app is not None:
            queues = services_of_app(app).queues
            await _finish_turns(queues, settings.slack.shutdown_grace_s, hurry)
        if lease_watch is not None:
            lease_watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await lease_watch
        if forwarded_stops is not None:
            forwarded_stops.cancel()
            # Bounded: a listener that swallowed its cancellation must not keep the process.
            await asyncio.wait({forwarded_stops}, timeout=CANCEL_TIDY_S)
        _forget_signals()
        if databases is not None:
            await databases.close()
        if model is not None:
            await model.close()
        await session.close()
        await state.close()
        if traces is not None:
            await asyncio.to_thread(traces.shutdown)  # the last spans are sent
