"""The model client: any OpenAI-compatible chat completions server, through `openai`.

Retries and timeouts are the client's own (connection errors, 408, 409, 429 and 5xx are
retried with backoff; 400, 401, 403 and 404 are not). Whatever still goes wrong becomes a
`ModelError` with a sentence a person can act on.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import aiohttp
import httpx2  # the HTTP library of openai >= 3, whose raw responses we read
import openai

from bot.agent.streaming import (
    UnreadableResponse,
    read_stream,
    stream_lines,
    turn_from_completion,
)
from bot.agent.turns import JsonObject, ModelTurn
from bot.config import Settings
from bot.observability import observe

log = logging.getLogger(__name__)

# Local OpenAI-compatible servers often need no key, but the client insists on one.
_NO_KEY = "not-set"


def completion_request(
    model: str,
    messages: Sequence[JsonObject],
    tools: Sequence[JsonObject],
    *,
    streaming: bool,
) -> dict[str, Any]:
    """The body of a chat completions request; a streamed one asks for the usage too."""
    request: dict[str, Any] = {"model": model, "messages": list(messages)}
    if tools:
        request["tools"] = list(tools)
    if streaming:
        request["stream"] = True
        request["stream_options"] = {"include_usage": True}
    return request


class ModelError(Exception):
    """The model could not be asked; the message is worded for the person."""


class ModelClient:
    def __init__(
        self,
        client: openai.AsyncOpenAI,
        model: str,
        *,
        stream: bool = True,
        max_retries: int = 0,
        timeout_s: float = 0.0,
    ) -> None:
        self._client = client
        self.model = model
        self.stream = stream
        self._max_retries = max_retries
        self._timeout_s = timeout_s

    @observe.model_call
    async def complete(
        self,
        messages: Sequence[JsonObject],
        tools: Sequence[JsonObject],
        *,
        stream: bool | None = None,
    ) -> ModelTurn:
        streaming = self.stream if stream is None else stream
        request = completion_request(self.model, messages, tools, streaming=streaming)
        try:
            # The client's own request path (retries, backoff, timeouts, errors), with the
            # body sent as it is and the response read as JSON (see streaming.py for why).
            response = await self._client.post(
                "/chat/completions", cast_to=httpx2.Response, body=request, stream=streaming
            )
            if not streaming:
                return turn_from_completion(response.json())
            try:
                return await read_stream(stream_lines(response.aiter_bytes()))
            finally:
                await response.aclose()
        except openai.APIError as exc:
            raise ModelError(self._describe(exc)) from exc
        except (UnreadableResponse, ValueError) as exc:
            log.warning("unreadable model response: %s", exc)
            raise ModelError(f"the model server sent an unreadable response ({exc})") from exc
        except httpx2.HTTPError as exc:  # the connection broke while reading the body
            raise ModelError(f"the model server's response was cut off ({exc})") from exc

    async def close(self) -> None:
        """Close the HTTP connections (call once, at shutdown)."""
        await self._client.close()

    def _describe(self, exc: openai.APIError) -> str:
        base = self._client.base_url
        if isinstance(exc, openai.AuthenticationError):
            return "the model server refused the API key (401); check OPENAI_API_KEY"
        if isinstance(exc, openai.PermissionDeniedError):
            return f"the model server denied access (403): {_detail(exc)}"
        if isinstance(exc, openai.NotFoundError):
            return f"the model server does not know model {self.model!r} (404): {_detail(exc)}"
        if isinstance(exc, openai.APITimeoutError) and not _refused(exc):
            return (
                f"the model server at {base} did not answer within {self._timeout_s:g} s "
                f"(tried {self._max_retries + 1} times)"
            )
        if isinstance(exc, openai.APIConnectionError):
            return f"cannot reach the model server at {base} (tried {self._max_retries + 1} times)"
        if isinstance(exc, openai.APIStatusError):
            if exc.status_code == 429 or exc.status_code >= 500:
                return (
                    f"the model server failed with HTTP {exc.status_code} after "
                    f"{self._max_retries + 1} attempts: {_detail(exc)}"
                )
            return f"the model server rejected the request ({exc.status_code}): {_detail(exc)}"
        log.warning("unreadable model response: %r", exc)
        return f"the model server sent an unreadable response: {exc}"


def _refused(exc: BaseException) -> bool:
    """Whether a 'timeout' was really a refused connection: the aiohttp transport reports
    every connection error as a connect timeout."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, aiohttp.ClientConnectorError | ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message") or (body.get("error") or {}).get("message")
        if message:
            return str(message)[:300]
    return str(exc.message)[:300]


def build_model_client(settings: Settings, *, stream: bool = True) -> ModelClient:
    limits = settings.limits
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else _NO_KEY
    client = openai.AsyncOpenAI(
        base_url=settings.openai_base_url or None,
        api_key=key or _NO_KEY,
        max_retries=limits.model_max_retries,
        timeout=limits.model_timeout_s,
        # aiohttp underneath: httpx's pool checks every idle connection on every request,
        # which under a hundred concurrent threads cost more CPU than the rest of a turn.
        http_client=openai.DefaultAioHttpClient(timeout=limits.model_timeout_s),
    )
    return ModelClient(
        client,
        settings.openai_model,
        stream=stream,
        max_retries=limits.model_max_retries,
        timeout_s=limits.model_timeout_s,
    )
