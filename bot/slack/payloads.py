"""The shape a signed HTTP request must have before Bolt reads it.

Slack signs whatever it sends, so a signature proves where a body came from, not that it
is well formed: a proxy that mangles bodies, a replayed test payload or a bug on either
side can deliver valid JSON of the wrong shape. Bolt and the listeners index into it
freely, so such a body is refused here with 400 and one log line, instead of failing
deeper with a 500 and a traceback.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

# Top-level fields that, when present, must be objects (dicts) or lists of objects.
_OBJECTS = ("event", "user", "view", "container", "channel", "message", "team", "state")
_LISTS_OF_OBJECTS = ("actions", "authorizations")
_MAX_DEPTH = 64


def problem(body: str, content_type: str) -> str | None:
    """Why this body is malformed (None: Bolt may read it)."""
    payload: Any
    try:
        if content_type.startswith("application/json"):
            payload = json.loads(body)
        elif content_type.startswith("application/x-www-form-urlencoded"):
            form = parse_qs(body, keep_blank_values=True)
            if "payload" not in form:
                return None if "command" in form or "ssl_check" in form else "no payload field"
            payload = json.loads(form["payload"][0])
        else:
            return f"unexpected content type {content_type or 'none'}"
    except (ValueError, RecursionError):
        return "not JSON"
    if not isinstance(payload, dict):
        return f"a JSON {type(payload).__name__}, not an object"
    if not isinstance(payload.get("type", ""), str):
        return "type is not a string"
    for name in _OBJECTS:
        if name in payload and not isinstance(payload[name], dict | None):
            return f"{name} is not an object"
    for name in _LISTS_OF_OBJECTS:
        value = payload.get(name)
        if value is not None and not (
            isinstance(value, list) and all(isinstance(item, dict) for item in value)
        ):
            return f"{name} is not a list of objects"
    event = payload.get("event")
    if isinstance(event, dict) and not isinstance(event.get("type", ""), str):
        return "event type is not a string"
    view = payload.get("view")
    if isinstance(view, dict) and not isinstance(view.get("state", {}), dict):
        return "view state is not an object"
    if _has_broken_text(payload):
        return "text that is not valid Unicode"
    return None


def _has_broken_text(node: Any, depth: int = 0) -> bool:
    """A lone surrogate ("\\ud800") decodes from JSON but cannot be stored or posted."""
    if depth > _MAX_DEPTH:
        return True
    if isinstance(node, str):
        try:
            node.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(node, dict):
        return any(
            _has_broken_text(key, depth + 1) or _has_broken_text(value, depth + 1)
            for key, value in node.items()
        )
    if isinstance(node, list):
        return any(_has_broken_text(item, depth + 1) for item in node)
    return False
