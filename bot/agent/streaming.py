"""Assembling a streamed chat completion into one `ModelTurn`.

Tool calls arrive in fragments keyed by `index`: the first fragment usually carries the id
and name, later ones only pieces of the arguments. Some servers repeat id and name on later
fragments as "" or null, or repeat them in full: the first non-empty value wins, so neither
an empty nor a repeated value spoils what was already received.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from bot.agent.turns import JsonObject, ModelTurn, ToolCall, Usage


def _extras(part: Any) -> JsonObject:
    """Fields a pydantic model of the openai client received but does not declare."""
    extra = getattr(part, "model_extra", None) or {}
    return {key: value for key, value in extra.items() if value is not None}


def _merge_first(into: JsonObject, extra: JsonObject) -> None:
    for key, value in extra.items():
        if value in (None, "", {}, []):
            continue
        if key not in into:
            into[key] = value
        elif isinstance(into[key], dict) and isinstance(value, dict):
            _merge_first(into[key], value)


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    extra: JsonObject = field(default_factory=dict)
    function_extra: JsonObject = field(default_factory=dict)


class StreamAssembler:
    """Feed it every chunk of a stream; `turn()` gives the assembled result."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self._usage = Usage()

    def add(self, chunk: Any) -> None:
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self._usage = Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0)
        for choice in getattr(chunk, "choices", None) or []:
            delta = choice.delta
            if delta is None:
                continue
            if delta.content:
                self._text.append(delta.content)
            for position, fragment in enumerate(delta.tool_calls or []):
                # Some servers leave out `index`; then fragments follow their position.
                index = fragment.index if fragment.index is not None else position
                partial = self._calls.setdefault(index, _PartialCall())
                if fragment.id and not partial.id:
                    partial.id = fragment.id
                function = fragment.function
                if function is not None:
                    if function.name and not partial.name:
                        partial.name = function.name
                    if function.arguments:
                        partial.arguments.append(function.arguments)
                    _merge_first(partial.function_extra, _extras(function))
                extra = _extras(fragment)
                extra.pop("type", None)
                _merge_first(partial.extra, extra)

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


def turn_from_completion(completion: Any) -> ModelTurn:
    """The same `ModelTurn` from a non-streamed response."""
    usage = completion.usage
    turn_usage = Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0) if usage else Usage()
    if not completion.choices:
        return ModelTurn(text="", usage=turn_usage)
    message = completion.choices[0].message
    calls = []
    for raw in message.tool_calls or []:
        function = getattr(raw, "function", None)
        extra = _extras(raw)
        extra.pop("type", None)
        calls.append(
            ToolCall(
                id=raw.id or f"call_{uuid.uuid4().hex[:12]}",
                name=(function.name if function else "") or "",
                arguments=(function.arguments if function else "") or "",
                extra=extra,
                function_extra=_extras(function) if function else {},
            )
        )
    return ModelTurn(text=message.content or "", tool_calls=tuple(calls), usage=turn_usage)
