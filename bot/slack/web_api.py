"""The Slack Web API client: every call bounded in time, retried on what is worth retrying,
and slowed only where and when Slack says so.

- Timeout: each attempt of a call (and of a file upload) gives up after `timeout_s`, 30 s
  by default. The aiohttp session the client shares must carry that timeout itself:
  slack_sdk applies its own only to sessions it creates, so a plain session would leave a
  hung request waiting for aiohttp's five minutes. `api_session` makes one that fits.
- Retries (slack_sdk's retry handlers): connection errors and timeouts, and HTTP 5xx,
  with backoff. `ok: false` answers are not retried here: they are the caller's to handle
  (delivery.py falls back to plainer forms).
- Rate limits, reactively: calls go at once while Slack accepts them. A 429 says what to
  slow down — a channel's posts (chat.postMessage, about one per second per channel with
  short bursts) or a method's tier (per workspace) — and for how long (Retry-After). The
  calls for that channel or method then wait it out and resume one at a time, in the
  order they came, until Slack accepts again. Progress updates (calls made after
  `progress_calls()`) never wait: while Slack has said to slow down they are dropped
  (ProgressDropped), so answers and cards go first and progress is never queued.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from typing import Any

import aiohttp
from aiohttp import ClientOSError, ServerConnectionError, ServerDisconnectedError
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.config import ConfigError, Settings
from bot.observability.slack import SlackCallCounter

log = logging.getLogger(__name__)

TIMEOUT_S = 30.0
CONNECTION_RETRIES = 3
RATE_LIMIT_RETRIES = 8  # 429s one call waits out before it gives up
MAX_RETRY_AFTER_S = 120.0  # a longer Retry-After is taken as this
SERVER_ERROR_RETRIES = 4
BACKOFF_S = 0.5  # first wait; doubles each retry
# Methods that post a message into a channel, and so count against its rate.
_POSTING = frozenset({"chat.postMessage", "chat.startStream", "files.completeUploadExternal"})
# Errors that say the bot cannot reach a channel at all: worth one log line and /health,
# not a line per message.
UNREACHABLE = frozenset({"not_in_channel", "channel_not_found", "is_archived"})
# `ok: false` answers that say Slack itself stumbled (HTTP 200 all the same): worth a retry.
TRANSIENT = frozenset({"internal_error", "service_unavailable", "request_timeout", "ratelimited"})
# Links and media in answers are not expanded: the bot's text should stand as written.
_NO_UNFURL = {"unfurl_links": False, "unfurl_media": False}


class ServerErrorRetryHandler(AsyncServerErrorRetryHandler):
    """slack_sdk's handler retries 500 and 503 only; a proxy in front of Slack answers 502
    and 504 just as transiently."""

    async def _can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        return response is not None and 500 <= response.status_code <= 599


class TransientErrorRetryHandler(AsyncRetryHandler):
    """Retries an `ok: false` answer whose error says Slack failed, not the request."""

    async def _can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if response is None or response.status_code == 429:  # PacedWebClient's to wait out
            return False
        body = response.body
        return isinstance(body, dict) and body.get("ok") is False and body.get("error") in TRANSIENT


class ProgressDropped(Exception):
    """A progress update not sent because Slack asked to slow down where it goes: progress
    is dropped, not queued (the next update carries the latest state)."""


_PROGRESS: contextvars.ContextVar[bool] = contextvars.ContextVar("slack_progress", default=False)


def progress_calls() -> contextvars.Token[bool]:
    """From here on in this task, Web API calls are progress updates: sent at once while
    Slack accepts, dropped (ProgressDropped) while it has said to wait. Call it in a task
    of its own (a progress writer), whose context is its own."""
    return _PROGRESS.set(True)


def rate_limit_keys(api_method: str, channel: str | None) -> tuple[str, ...]:
    """What a 429 on this call says to slow down: chat.postMessage is limited per channel;
    every other method by its tier, per workspace."""
    if api_method == "chat.postMessage" and channel is not None:
        return (f"channel:{channel}",)
    return (f"method:{api_method}",)


def retry_after_s(exc: SlackApiError) -> float | None:
    """Slack's Retry-After of a 429 (seconds), or None when the error is not a 429."""
    if exc.response.status_code != 429:
        return None
    headers = exc.response.headers or {}
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    try:
        seconds = float(value[0] if isinstance(value, list) else value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        seconds = 1.0
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


class SlowDowns:
    """What Slack has said to slow down on (a channel's posts, a method's tier), and until
    when. Nothing waits before Slack has said so; afterwards the calls for that channel or
    method wait out Retry-After and then go one at a time, in the order they came, until
    one is accepted."""

    def __init__(self) -> None:
        self._until: dict[str, float] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.waits = 0  # 429s honoured (for the tests and /metrics)

    def lock(self, key: str) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    def behind(self, keys: tuple[str, ...]) -> bool:
        now = time.monotonic()
        return any(self._until.get(k, 0.0) > now or self.lock(k).locked() for k in keys)

    def slow_down(self, keys: tuple[str, ...], seconds: float) -> None:
        self.waits += 1
        until = time.monotonic() + seconds
        for key in keys:
            self._until[key] = max(self._until.get(key, 0.0), until)

    async def wait_out(self, keys: tuple[str, ...]) -> None:
        """Sleep until every key's Retry-After has run out (a 429 meanwhile extends it)."""
        for _ in range(RATE_LIMIT_RETRIES + 1):
            delay = max(self._until.get(k, 0.0) for k in keys) - time.monotonic()
            if delay <= 0:
                return
            await asyncio.sleep(delay)


class PacedWebClient(AsyncWebClient):
    """AsyncWebClient that reacts to Slack's 429s rather than pre-empting them: calls go at
    once while Slack accepts; after a 429 the calls for that channel (posts) or method (its
    tier) wait out Retry-After and resume in order, progress updates are dropped instead
    of waiting, posts never unfurl, and the channels Slack says it cannot reach are
    remembered."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.slow_downs = SlowDowns()
        self.unreachable: dict[str, str] = {}  # channel → Slack's error, for /health

    async def api_call(
        self, api_method: str, *, json: dict[str, Any] | None = None, **kwargs: Any
    ) -> AsyncSlackResponse:
        body = json if json is not None else kwargs.get("data") or kwargs.get("params") or {}
        channel = body.get("channel") or body.get("channel_id") if isinstance(body, dict) else None
        channel = channel if isinstance(channel, str) and channel else None
        if api_method == "chat.postMessage" and json is not None:
            json = {**_NO_UNFURL, **json}
        keys = rate_limit_keys(api_method, channel)
        slow = self.slow_downs
        rate_limited = 0
        while not slow.behind(keys):  # Slack has said nothing: at once
            try:
                return await self._call(api_method, channel, json, kwargs)
            except SlackApiError as exc:
                rate_limited = self._slowed(api_method, keys, exc, rate_limited)
        if _PROGRESS.get():
            raise ProgressDropped(api_method)
        async with contextlib.AsyncExitStack() as turns:  # wait out Retry-After, in order
            for key in sorted(keys):
                await turns.enter_async_context(slow.lock(key))
            while True:
                await slow.wait_out(keys)
                try:
                    return await self._call(api_method, channel, json, kwargs)
                except SlackApiError as exc:
                    rate_limited = self._slowed(api_method, keys, exc, rate_limited)

    async def _call(
        self,
        api_method: str,
        channel: str | None,
        json: dict[str, Any] | None,
        kwargs: dict[str, Any],
    ) -> AsyncSlackResponse:
        try:
            response = await super().api_call(api_method, json=json, **kwargs)
        except SlackApiError as exc:
            if exc.response.status_code != 429:
                self._note_unreachable(api_method, channel, exc)
            raise
        if channel is not None and api_method in _POSTING:
            self.unreachable.pop(channel, None)  # reachable (again)
        return response

    def _slowed(
        self, api_method: str, keys: tuple[str, ...], exc: SlackApiError, rate_limited: int
    ) -> int:
        """Note a 429 (re-raising anything else, a progress update's 429 as dropped, and
        the 429 past the retries); returns the count of 429s this call has had."""
        seconds = retry_after_s(exc)
        if seconds is None or rate_limited >= RATE_LIMIT_RETRIES:
            raise exc
        self.slow_downs.slow_down(keys, seconds)
        log.info("Slack asked to wait %.3g s on %s (%s)", seconds, keys[0], api_method)
        if _PROGRESS.get():
            raise ProgressDropped(api_method) from exc
        return rate_limited + 1

    def _note_unreachable(self, api_method: str, channel: str | None, exc: SlackApiError) -> None:
        error = exc.response.get("error")
        if error not in UNREACHABLE:
            return
        where = channel or "?"
        if where not in self.unreachable:
            log.error(
                "Slack says the bot cannot reach channel %s (%s, on %s): invite the bot, "
                "or check the channel still exists",
                where,
                error,
                api_method,
            )
        self.unreachable[where] = str(error)


def retry_handlers(backoff_s: float = BACKOFF_S) -> list[Any]:
    backoff = BackoffRetryIntervalCalculator(backoff_factor=backoff_s)
    return [
        AsyncConnectionErrorRetryHandler(
            max_retry_count=CONNECTION_RETRIES,
            interval_calculator=backoff,
            error_types=[
                ServerConnectionError,
                ServerDisconnectedError,
                ClientOSError,
                TimeoutError,  # the attempt's timeout ran out (a hung request)
            ],
        ),
        ServerErrorRetryHandler(max_retry_count=SERVER_ERROR_RETRIES, interval_calculator=backoff),
        TransientErrorRetryHandler(
            max_retry_count=SERVER_ERROR_RETRIES, interval_calculator=backoff
        ),
    ]


def api_session(timeout_s: float = TIMEOUT_S) -> aiohttp.ClientSession:
    """A session to share between Web API calls, with the per-attempt timeout."""
    return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s))


def make_client(
    settings: Settings,
    *,
    session: aiohttp.ClientSession | None = None,
    timeout_s: float = TIMEOUT_S,
    backoff_s: float = BACKOFF_S,
) -> PacedWebClient:
    """The Web API client: SLACK_API_URL when set. Pass a shared `session` (from
    `api_session`, with the same timeout) to reuse connections."""
    if settings.slack_bot_token is None or not settings.slack_bot_token.get_secret_value():
        raise ConfigError(
            "SLACK_BOT_TOKEN is not set (the bot token, xoxb-…, from the Slack app's "
            "OAuth & Permissions page)"
        )
    if session is not None:
        total = session.timeout.total
        if total is None or total > timeout_s:
            raise ValueError(
                f"the Web API session's timeout ({total} s) must be at most {timeout_s} s; "
                "make it with api_session()"
            )
    base_url = settings.slack_api_url or AsyncWebClient.BASE_URL
    if not base_url.endswith("/"):
        base_url += "/"  # the client joins method names onto it
    return PacedWebClient(
        token=settings.slack_bot_token.get_secret_value(),
        base_url=base_url,
        session=session,
        timeout=int(timeout_s) if timeout_s >= 1 else 1,
        retry_handlers=[SlackCallCounter(), *retry_handlers(backoff_s)],
    )
