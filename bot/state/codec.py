"""Records are JSON objects, stored as JSON text: never pickle, so reading cannot run code."""

from __future__ import annotations

import json
from typing import Any

from bot.state.errors import StateError

Record = dict[str, Any]


def encode(record: Record) -> str:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)


def decode_value(text: str | bytes, where: str) -> Any:
    """Any JSON value (a part of a record, stored apart from it)."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise StateError(f"state record {where} is corrupt: {exc}") from None


def decode(text: str | bytes, where: str) -> Record:
    value = decode_value(text, where)
    if not isinstance(value, dict):
        raise StateError(f"state record {where} is corrupt: not a JSON object")
    return value


def days_to_seconds(days: float) -> float | None:
    """A retention in days as seconds; None when 0 (kept forever)."""
    return days * 86400.0 if days > 0 else None
