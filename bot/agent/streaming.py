"""Reading chat completions off the wire, streamed or not, into one `ModelTurn`.

We read the JSON the server sent rather than the openai client's pydantic models: building
those models (and transforming the request through its typed dicts) cost several times the
CPU of everything else a turn does, and plain dicts keep every provider-specific field as it
came, to be sent back unchanged.

Tool calls in a stream arrive in fragments keyed by `index`: the first fragment usually carries
the id and name, later ones only pieces of the arguments. Some servers repeat id and name on
later fragments as "" or null, or repeat them in full: the first non-empty value wins, so
neither an empty nor a repeated value spoils what was already received.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from bot.agent.turns import JsonObject, ModelTurn, ToolCall, Usage

_CALL_FIELDS = frozenset({"index", "id", "type", "function"})
_FUNCTION_FIELDS = frozenset({"name", "arguments"})


class UnreadableResponse(Exception):
    """The server's answer is not a chat completion (or says it failed mid-stream)."""


def _extras(part: JsonObject, known: frozenset[str]) -> JsonObject:
    """Fields the server sent beyond the standard ones (Gemini's thought signature…)."""
    return {key: value for key, value in part.items() if key not in known and value is not None}


def _merge_first(into: JsonObject, extra: JsonObject) -> None:
    for key, value in extra.items():
        if value in (None, "", {}, []):
            continue
        if key not in into:
            into[key] = value
        elif isinstance(into[key], dict) and isinstance(value, dict):
            _merge_first(into[key], value)


def _usage(data: Any) -> Usage | None:
    if not isinstance(data, dict):
        return None
    return Usage(int(data.get("prompt_tokens") or 0), int(data.get("completion_tokens") or 0))


def _object(value: Any) -> JsonObject:
    return value if isinstance(value, dict) else {}


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    extra: JsonObject = field(default_factory=dict)
    function_extra: JsonObject = field(default_factory=dict)


class StreamAssembler:
    """Feed it every chunk (parsed JSON) of a stream; `turn()` gives the assembled result."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self._usage = Usage()

    def add(self, chunk: JsonObject) -> None:
        if "error" in chunk:
            raise UnreadableResponse(f"the stream reported an error: {chunk['error']}")
        usage = _usage(chunk.get("usage"))
        if usage is not None:
            self._usage = usage
        for choice in chunk.get("choices") or []:
            delta = _object(_object(choice).get("delta"))
            if isinstance(delta.get("content"), str):
                self._text.append(delta["content"])
            for position, raw in enumerate(delta.get("tool_calls") or []):
                self._add_fragment(position, _object(raw))

    def _add_fragment(self, position: int, fragment: JsonObject) -> None:
        # Some servers leave out `index`; then fragments follow their position.
        index = fragment.get("index")
        partial = self._calls.setdefault(
            index if isinstance(index, int) else position, _PartialCall()
        )
        if fragment.get("id") and not partial.id:
            partial.id = str(fragment["id"])
        function = _object(fragment.get("function"))
        if function.get("name") and not partial.name:
            partial.name = str(function["name"])
        if function.get("arguments"):
            partial.arguments.append(str(function["arguments"]))
        _merge_first(partial.function_extra, _extras(function, _FUNCTION_FIELDS))
        _merge_first(partial.extra, _extras(fragment, _CALL_FIELDS))

    def turn(self) -> ModelTurn:
        calls = tuple(
            ToolCall(
                id=partial.id or f"call_{uuid.uuid4().hex[:12]}",
                name=partial.name,
                arguments="".join(partial.arguments),
                extra=partial.extra,
                function_extra=partial.function_extra,
            )
            for _, partial in sorted(self._calls.items())
        )
        return ModelTurn(text="".join(self._text), tool_calls=calls, usage=self._usage)


async def stream_lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
    """The lines of a response body read as bytes (an event stream is UTF-8), without their
    endings (LF, CRLF or CR, as the HTTP client's own line reader splits them). Split from
    the bytes directly: that reader decodes every chunk as text and looks up the body's
    charset again for each, which cost more than the rest of reading a streamed answer."""
    pending = b""
    async for chunk in chunks:
        pending += chunk
        lines = pending.splitlines(keepends=True)
        # The last piece may be a line still arriving, or end in the CR of a CRLF split
        # between two chunks: it waits for the next chunk.
        pending = lines.pop() if lines and not lines[-1].endswith(b"\n") else b""
        for line in lines:
            yield line.rstrip(b"\r\n").decode("utf-8", "replace")
    if pending:
        yield pending.rstrip(b"\r\n").decode("utf-8", "replace")


async def read_stream(lines: AsyncIterator[str]) -> ModelTurn:
    """Server-sent events: `data: {chunk}` lines until `data: [DONE]` (or the end)."""
    assembler = StreamAssembler()
    async for line in lines:
        if not line.startswith("data:"):
            continue  # blank separators, comments (": keep-alive"), `event:` lines
        data = line[5:].strip()
        if data == "[DONE]":
            break
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError:
            raise UnreadableResponse(f"a stream chunk is not JSON: {data[:120]!r}") from None
        if isinstance(chunk, dict):
            assembler.add(chunk)
    return assembler.turn()


def turn_from_completion(completion: Any) -> ModelTurn:
    """The same `ModelTurn` from a non-streamed response body."""
    if not isinstance(completion, dict):
        raise UnreadableResponse("the response is not a JSON object")
    if "error" in completion and not completion.get("choices"):
        raise UnreadableResponse(f"the response reported an error: {completion['error']}")
    turn_usage = _usage(completion.get("usage")) or Usage()
    choices = completion.get("choices")
    if not choices:
        return ModelTurn(text="", usage=turn_usage)
    message = _object(_object(choices[0]).get("message"))
    calls = []
    for raw in message.get("tool_calls") or []:
        call = _object(raw)
        function = _object(call.get("function"))
        calls.append(
            ToolCall(
                id=str(call.get("id") or f"call_{uuid.uuid4().hex[:12]}"),
                name=str(function.get("name") or ""),
                arguments=str(function.get("arguments") or ""),
                extra=_extras(call, _CALL_FIELDS),
                function_extra=_extras(function, _FUNCTION_FIELDS),
            )
        )
    content = message.get("content")
    return ModelTurn(
        text=content if isinstance(content, str) else "", tool_calls=tuple(calls), usage=turn_usage
    )
