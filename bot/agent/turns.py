"""What one model call hands back, and how it is written into the conversation."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text as the model sent it; parsed (and judged) by the tools
    # Provider-specific fields (Gemini's thought signature under `extra_content`, anything
    # else the server put there). Sent back unchanged, or some providers refuse the next turn.
    extra: JsonObject = field(default_factory=dict)
    function_extra: JsonObject = field(default_factory=dict)

    def to_message(self) -> JsonObject:
        return {
            **self.extra,
            "id": self.id,
            "type": "function",
            "function": {**self.function_extra, "name": self.name, "arguments": self.arguments},
        }

    @classmethod
    def from_message(cls, data: JsonObject) -> ToolCall:
        function = dict(data.get("function") or {})
        return cls(
            id=str(data.get("id") or ""),
            name=str(function.pop("name", "") or ""),
            arguments=str(function.pop("arguments", "") or ""),
            extra={k: v for k, v in data.items() if k not in ("id", "type", "function")},
            function_extra=function,
        )


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class ModelTurn:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)

    def __post_init__(self) -> None:
        # Results are matched to calls by id; a server that repeats ids ("0", "0") would
        # leave calls unanswered, so repeats get a suffix.
        seen: set[str] = set()
        calls = []
        for call in self.tool_calls:
            unique, n = call.id, 1
            while unique in seen:
                n += 1
                unique = f"{call.id}_{n}"
            seen.add(unique)
            calls.append(call if unique == call.id else replace(call, id=unique))
        object.__setattr__(self, "tool_calls", tuple(calls))

    @property
    def is_empty(self) -> bool:
        return not self.text.strip() and not self.tool_calls

    def assistant_message(self) -> JsonObject:
        message: JsonObject = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            message["tool_calls"] = [call.to_message() for call in self.tool_calls]
        return message
