"""Slack Web API calls counted by method and result, at every attempt (retries included)."""

from __future__ import annotations

from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState

from bot.observability import metrics


class SlackCallCounter(AsyncRetryHandler):
    """First among the Web API client's retry handlers, it sees every attempt's answer (ok,
    429, error) and never asks for a retry itself."""

    def __init__(self) -> None:
        super().__init__(max_retry_count=2**31)

    async def _can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        path = request.url.split("?", 1)[0]
        # A file's bytes go to an upload URL Slack made up (files.slack.com/upload/v1/…).
        method = "upload" if "/upload/" in path else path.rstrip("/").rsplit("/", 1)[-1]
        if response is None:
            result = "error"
        elif response.status_code == 429:
            result = "429"
        else:
            body = response.body
            ok = response.status_code == 200 and (not isinstance(body, dict) or body.get("ok"))
            result = "ok" if ok else "error"
        metrics.slack_call(method, result)
        return False
