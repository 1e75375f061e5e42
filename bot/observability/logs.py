"""Log lines as JSON when DBAGENT_LOG_FORMAT=json: one object per line, with the session and
Slack event a turn works for on every line it logs (context variables, so a line logged by
any task of the turn carries them, and lines of other turns never do)."""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
from collections.abc import Iterator
from datetime import UTC, datetime

FORMAT_ENV = "DBAGENT_LOG_FORMAT"
_FIELDS: contextvars.ContextVar[tuple[tuple[str, str], ...]] = contextvars.ContextVar(
    "dbagent_log_fields", default=()
)


def fields() -> dict[str, str]:
    """The fields bound to what runs now."""
    return dict(_FIELDS.get())


@contextlib.contextmanager
def bound(**values: str | None) -> Iterator[None]:
    """Add fields (None: left out) to every line logged inside the block."""
    extra = {key: str(value) for key, value in values.items() if value}
    token = _FIELDS.set(tuple({**fields(), **extra}.items()))
    try:
        yield
    finally:
        _FIELDS.reset(token)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **fields(),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def wants_json() -> bool:
    return os.environ.get(FORMAT_ENV, "").strip().lower() == "json"


def use_json(handler: logging.Handler | None = None) -> None:
    """JSON lines on `handler` (every handler of the root logger when None)."""
    for each in [handler] if handler is not None else logging.getLogger().handlers:
        each.setFormatter(JsonFormatter())
