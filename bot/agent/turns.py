"""What one model call hands back, and how it is written into the conversation."""

from __future__ import annotations

import json
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


# What the stored history keeps of a call whose arguments were refused for their size.
_REFUSED_KEY = "refused_arguments"


def bound_arguments(turn: ModelTurn, max_chars: int) -> ModelTurn:
    """The turn with every oversized call's arguments replaced by a short placeholder: an
    argument string longer than `max_chars` (or arguments too long to hold one that is not)
    would otherwise stay in the thread's history and break every later request."""
    if all(len(call.arguments) <= max_chars for call in turn.tool_calls):
        return turn
    calls = []
    for call in turn.tool_calls:
        size = _oversized(call.arguments, max_chars)
        if size is None:
            calls.append(call)
            continue
        note = {_REFUSED_KEY: f"{size:,} characters (the limit is {max_chars:,})"}
        calls.append(replace(call, arguments=json.dumps(note)))
    return replace(turn, tool_calls=tuple(calls))


def refused_arguments(call: ToolCall) -> str | None:
    """The refusal for a call whose arguments `bound_arguments` replaced, else None."""
    if _REFUSED_KEY not in call.arguments or len(call.arguments) > 200:
        return None
    try:
        data = json.loads(call.arguments)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or set(data) != {_REFUSED_KEY}:
        return None
    return (
        f"Error: the arguments of this {call.name} call were {data[_REFUSED_KEY]}; nothing "
        "was run and they were not kept. Send smaller arguments (split long SQL into "
        "several calls)."
    )


def _oversized(arguments: str, max_chars: int) -> int | None:
    """The length of the offending text, or None when every argument fits."""
    if len(arguments) <= max_chars:
        return None
    if len(arguments) > 2 * max_chars + 1_000:  # no argument of it can fit: not parsed
        return len(arguments)
    try:
        data = json.loads(arguments)
    except json.JSONDecodeError:
        return len(arguments)
    values = data.values() if isinstance(data, dict) else [data]
    longest = max((len(v) for v in values if isinstance(v, str)), default=0)
    return longest if longest > max_chars else None
