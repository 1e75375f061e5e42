"""A local OpenAI-compatible model server that replays scripted turns.

It speaks `/v1/chat/completions` the way OpenAI does — a JSON body, or Server-Sent Events
(`data: {...}` chunks, then `data: [DONE]`) when the request asks to stream — so tests drive
the real `openai` client. Tool-call arguments are split into fragments in a stream, with the
id and name on the first chunk only, as real servers do.

Script it with a queue of turns (`say`, `calls`, `failure`), or with a `responder` that picks
the turn from the request (concurrent sessions: look at the request's messages). Every request
is recorded, so tests can check which tools were offered and which results came back.

    async with FakeModelServer([calls(call("list_tables", {"database": "shop"})), say("Done")])
    as server:
        client = AsyncOpenAI(base_url=server.url, api_key="test")
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from aiohttp import web

from tests.fakes.local import LocalServer

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class ScriptedCall:
    name: str
    arguments: str  # sent as is: may be malformed on purpose
    id: str | None = None  # None: the server makes one up
    extra: JsonObject = field(default_factory=dict)  # provider fields on the tool call


@dataclass(frozen=True)
class Turn:
    text: str = ""
    tool_calls: tuple[ScriptedCall, ...] = ()
    status: int = 200  # anything else: an error response with `error` as its message
    error: str = ""
    delay_s: float = 0.0


def say(text: str) -> Turn:
    """A turn that answers with text."""
    return Turn(text=text)


def call(
    name: str,
    arguments: JsonObject | str | None = None,
    *,
    id: str | None = None,
    extra: JsonObject | None = None,
) -> ScriptedCall:
    """One tool call; a dict is sent as JSON, a str exactly as written."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return ScriptedCall(name=name, arguments=raw, id=id, extra=dict(extra or {}))


def calls(*tool_calls: ScriptedCall, text: str = "") -> Turn:
    """A turn that calls tools (optionally saying something first)."""
    return Turn(text=text, tool_calls=tuple(tool_calls))


def failure(status: int, message: str = "") -> Turn:
    return Turn(status=status, error=message or f"scripted failure {status}")


Responder = Callable[[JsonObject], "Turn | Awaitable[Turn]"]
LaterChunkFields = Literal["absent", "empty", "null"]


def answer_once_released(
    turn: Turn,
    released: asyncio.Event,
    *,
    asked: asyncio.Event | None = None,
    within_s: float | None = None,
) -> Responder:
    """A model that holds every request until `released` is set (for `within_s` at most, when
    given), then answers `turn`; `asked` is set as each request comes in."""

    async def respond(body: JsonObject) -> Turn:
        if asked is not None:
            asked.set()
        await asyncio.wait_for(released.wait(), within_s)
        return turn

    return respond


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_api_key",
    403: "permission_denied",
    404: "not_found",
    429: "rate_limit_exceeded",
}


class FakeModelServer(LocalServer):
    def __init__(
        self,
        turns: list[Turn] | tuple[Turn, ...] = (),
        *,
        responder: Responder | None = None,
        delay_s: float = 0.0,
        api_key: str | None = None,
        fragment_chars: int = 7,
        later_chunk_fields: LaterChunkFields = "absent",
        retry_after_ms: int = 5,
    ) -> None:
        self._turns: deque[Turn] = deque(turns)
        self._failures: deque[Turn] = deque()
        self.responder = responder
        self.delay_s = delay_s  # every response waits this long (benchmarks: 0.2)
        self.api_key = api_key  # when set, any other bearer token gets a 401
        self.fragment_chars = fragment_chars
        # How later stream chunks of a tool call carry id and name: left out (OpenAI),
        # as "" or as null (seen from other servers) — clients must keep the first value.
        self.later_chunk_fields = later_chunk_fields
        # Sent on error responses so the client's own backoff waits milliseconds in tests.
        self.retry_after_ms = retry_after_ms
        self.requests: list[JsonObject] = []
        self.headers: list[dict[str, str]] = []
        self._ids = itertools.count(1)

    # -- scripting ----------------------------------------------------------------------
    def script(self, *turns: Turn) -> None:
        self._turns.extend(turns)

    def fail_next(self, status: int, times: int = 1, message: str = "") -> None:
        """The next `times` requests fail with `status`, before any scripted turn is used."""
        for _ in range(times):
            self._failures.append(failure(status, message))

    @property
    def remaining(self) -> int:
        return len(self._turns)

    # -- what the client sent -----------------------------------------------------------
    @property
    def last_request(self) -> JsonObject:
        return self.requests[-1]

    def tools_offered(self, index: int = -1) -> list[str]:
        return [tool["function"]["name"] for tool in self.requests[index].get("tools") or []]

    def tool_results(self, index: int = -1) -> list[JsonObject]:
        """The tool messages in a request, in order."""
        return [m for m in self.requests[index]["messages"] if m.get("role") == "tool"]

    def new_tool_results(self, index: int = -1) -> list[str]:
        """Contents of the tool messages after the request's last assistant message."""
        messages = self.requests[index]["messages"]
        last_assistant = max(
            (i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1
        )
        return [m["content"] for m in messages[last_assistant + 1 :] if m.get("role") == "tool"]

    # -- lifecycle ----------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}/v1"

    def build(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        return app

    # -- the endpoint -------------------------------------------------------------------
    async def _next_turn(self, body: JsonObject) -> Turn:
        if self._failures:
            return self._failures.popleft()
        if self.responder is not None:
            turn = self.responder(body)
            return await turn if inspect.isawaitable(turn) else turn
        if self._turns:
            return self._turns.popleft()
        return failure(400, "fake model server: no scripted turn left")

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        authorization = request.headers.get("Authorization")
        if self.api_key is not None and authorization != f"Bearer {self.api_key}":
            return self._error(failure(401, "Incorrect API key provided"))
        turn = await self._next_turn(body)
        if self.delay_s or turn.delay_s:
            await asyncio.sleep(self.delay_s + turn.delay_s)
        if turn.status != 200:
            return self._error(turn)
        calls_with_ids = [(c, c.id or f"call_{next(self._ids)}") for c in turn.tool_calls]
        usage = _usage(body, turn)
        if body.get("stream"):
            return await self._stream(request, body, turn, calls_with_ids, usage)
        return web.json_response(_completion(body, turn, calls_with_ids, usage))

    def _error(self, turn: Turn) -> web.Response:
        payload = {
            "error": {
                "message": turn.error,
                "type": _ERROR_TYPES.get(turn.status, "server_error"),
                "code": _ERROR_TYPES.get(turn.status),
            }
        }
        headers = {"retry-after-ms": str(self.retry_after_ms)}
        return web.json_response(payload, status=turn.status, headers=headers)

    async def _stream(
        self,
        request: web.Request,
        body: JsonObject,
        turn: Turn,
        calls_with_ids: list[tuple[ScriptedCall, str]],
        usage: JsonObject,
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        envelope = _envelope(body, "chat.completion.chunk")

        async def send(delta: JsonObject, finish: str | None = None) -> None:
            chunk = {**envelope, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())

        await send({"role": "assistant", "content": ""})
        for piece in _pieces(turn.text, self.fragment_chars):
            await send({"content": piece})
        for index, (scripted, call_id) in enumerate(calls_with_ids):
            first = {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": scripted.name, "arguments": ""},
                **scripted.extra,
            }
            await send({"tool_calls": [first]})
            for piece in _pieces(scripted.arguments, self.fragment_chars):
                later: JsonObject = {"index": index, "function": {"arguments": piece}}
                if self.later_chunk_fields != "absent":
                    blank = "" if self.later_chunk_fields == "empty" else None
                    later["id"] = blank
                    later["function"]["name"] = blank
                await send({"tool_calls": [later]})
        await send({}, "tool_calls" if calls_with_ids else "stop")
        if (body.get("stream_options") or {}).get("include_usage"):
            chunk = {**envelope, "choices": [], "usage": usage}
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def _envelope(body: JsonObject, kind: str) -> JsonObject:
    return {
        "id": f"chatcmpl-fake-{time.monotonic_ns()}",
        "object": kind,
        "created": int(time.time()),
        "model": body.get("model", "fake-model"),
    }


def _completion(
    body: JsonObject,
    turn: Turn,
    calls_with_ids: list[tuple[ScriptedCall, str]],
    usage: JsonObject,
) -> JsonObject:
    message: JsonObject = {"role": "assistant", "content": turn.text or None}
    if calls_with_ids:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": scripted.name, "arguments": scripted.arguments},
                **scripted.extra,
            }
            for scripted, call_id in calls_with_ids
        ]
    finish = "tool_calls" if calls_with_ids else "stop"
    return {
        **_envelope(body, "chat.completion"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }


def _usage(body: JsonObject, turn: Turn) -> JsonObject:
    prompt = max(1, len(json.dumps(body.get("messages", []))) // 4)
    completion = max(1, (len(turn.text) + sum(len(c.arguments) for c in turn.tool_calls)) // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@pytest.fixture
async def model_server() -> AsyncIterator[FakeModelServer]:
    """A started fake model server with an empty script; import it into a conftest to use."""
    server = FakeModelServer()
    await server.start()
    yield server
    await server.stop()
