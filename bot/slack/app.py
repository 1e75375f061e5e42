"""The Bolt app: one AsyncApp, its Web API client, and the listeners wired to the agent."""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING, Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import Settings
from bot.slack import listeners
from bot.slack.services import CONTEXT_KEY, Services
from bot.slack.web_api import make_client
from bot.state import State

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from slack_bolt.context.async_context import AsyncBoltContext

    from bot.agent import Agent

log = logging.getLogger(__name__)

_SERVICES: weakref.WeakKeyDictionary[AsyncApp, Services] = weakref.WeakKeyDictionary()


class _TokenFromEnvironmentNote(logging.Filter):
    """Bolt reads SLACK_BOT_TOKEN itself and warns that the client we pass wins; it does,
    and the client holds that very token, so the warning would only alarm whoever reads
    the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "`token` will be unused" not in record.getMessage()


logging.getLogger("slack_bolt.AsyncApp").addFilter(_TokenFromEnvironmentNote())


def build_app(
    settings: Settings,
    agent: Agent,
    state: State,
    client: AsyncWebClient | None = None,
) -> AsyncApp:
    """The Bolt app. Events are acknowledged before any work (process_before_response is
    off) and the work runs in per-thread queues; HTTP requests are signature-checked."""
    client = client or make_client(settings)
    secret = settings.slack_signing_secret
    services = Services.create(settings, agent, state, client)
    app = AsyncApp(
        name="dbagent",
        client=client,
        signing_secret=secret.get_secret_value() if secret else "",
        process_before_response=False,
        request_verification_enabled=True,
        ignoring_self_events_enabled=True,
    )

    async def attach_services(
        context: AsyncBoltContext, next: Callable[[], Awaitable[Any]]
    ) -> None:
        context[CONTEXT_KEY] = services
        await next()

    app.middleware(attach_services)
    app.error(_log_error)
    listeners.register(app)
    _SERVICES[app] = services
    return app


async def _log_error(error: Exception, body: dict[str, Any]) -> None:
    log.error(
        "unhandled error for %s %s: %s",
        body.get("type"),
        body.get("event_id") or (body.get("actions") or [{}])[0].get("action_id"),
        error,
        exc_info=error,
    )


def services_of_app(app: AsyncApp) -> Services:
    """The services `build_app` gave this app (queues to drain at shutdown, caches)."""
    return _SERVICES[app]
