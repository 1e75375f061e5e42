"""The Slack Web API client: every call bounded in time, retried on what is worth retrying,
and posts paced per channel.

- Timeout: each attempt of a call (and of a file upload) gives up after `timeout_s`, 30 s
  by default. The aiohttp session the client shares must carry that timeout itself:
  slack_sdk applies its own only to sessions it creates, so a plain session would leave a
  hung request waiting for aiohttp's five minutes. `api_session` makes one that fits.
- Retries (slack_sdk's retry handlers): connection errors and timeouts, HTTP 429 after its
  Retry-After, and HTTP 5xx, with backoff. `ok: false` answers are not retried here: they
  are the caller's to handle (delivery.py falls back to plainer forms).
- Pacing: Slack lets an app post about one message per second per channel, with short
  bursts. Posts to one channel wait their turn, in order, so a busy channel is slowed
  rather than answered with 429s that could outlast the retries.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import aiohttp
from aiohttp import ClientOSError, ServerConnectionError, ServerDisconnectedError
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.config import ConfigError, Settings

log = logging.getLogger(__name__)

TIMEOUT_S = 30.0
CONNECTION_RETRIES = 3
RATE_LIMIT_RETRIES = 8  # four 429s in a row must not lose an answer
SERVER_ERROR_RETRIES = 4
BACKOFF_S = 0.5  # first wait; doubles each retry
POSTS_PER_SECOND = 1.0  # per channel
POST_BURST = 4  # posts a quiet channel takes at once before pacing sets in
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
        body = response.body if response is not None else None
        return isinstance(body, dict) and body.get("ok") is False and body.get("error") in TRANSIENT


class ChannelPacer:
    """A token bucket per channel: `burst` posts at once, then `rate` per second, first
    come first served."""

    def __init__(self, rate: float = POSTS_PER_SECOND, burst: int = POST_BURST) -> None:
        self.rate = rate
        self.burst = burst
        self._buckets: dict[str, tuple[float, float]] = {}  # channel → (tokens, at)
        self._locks: dict[str, asyncio.Lock] = {}

    async def wait_turn(self, channel: str) -> None:
        lock = self._locks.setdefault(channel, asyncio.Lock())
        async with lock:  # asyncio locks wake waiters in order: posts keep their order
            tokens, at = self._buckets.get(channel, (float(self.burst), time.monotonic()))
            now = time.monotonic()
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            if tokens < 1.0:
                await asyncio.sleep((1.0 - tokens) / self.rate)
                now = time.monotonic()
                tokens = 1.0
            self._buckets[channel] = (tokens - 1.0, now)


class PacedWebClient(AsyncWebClient):
    """AsyncWebClient whose posts wait for their channel's turn and never unfurl, and
    which remembers the channels Slack says it cannot reach."""

    def __init__(self, *args: Any, pacer: ChannelPacer | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pacer = pacer or ChannelPacer()
        self.unreachable: dict[str, str] = {}  # channel → Slack's error, for /health

    async def api_call(
        self, api_method: str, *, json: dict[str, Any] | None = None, **kwargs: Any
    ) -> AsyncSlackResponse:
        body = json if json is not None else kwargs.get("data") or kwargs.get("params") or {}
        channel = body.get("channel") or body.get("channel_id") if isinstance(body, dict) else None
        channel = channel if isinstance(channel, str) and channel else None
        posting = api_method in _POSTING
        if posting and channel is not None:
            await self.pacer.wait_turn(channel)
        if api_method == "chat.postMessage" and json is not None:
            json = {**_NO_UNFURL, **json}
        try:
            response = await super().api_call(api_method, json=json, **kwargs)
        except SlackApiError as exc:
            self._note_unreachable(api_method, channel, exc)
            raise
        if posting and channel is not None:
            self.unreachable.pop(channel, None)  # reachable (again)
        return response

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
        AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
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
    pacer: ChannelPacer | None = None,
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
        retry_handlers=retry_handlers(backoff_s),
        pacer=pacer,
    )
