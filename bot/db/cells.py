"""Render driver values as short, JSON-safe cells that say exactly what the server holds."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from asyncmy.constants import FIELD_TYPE

from bot.db.types import Cell

# Bytes shown as hex before the "…": enough to recognise a UUID or a magic number.
_HEX_PREFIX_BYTES = 16


def render_row(
    row: Sequence[Any], type_codes: Sequence[int | None], cell_chars: int
) -> tuple[Cell, ...]:
    return tuple(
        render_cell(value, type_code, cell_chars)
        for value, type_code in zip(row, type_codes, strict=True)
    )


def render_cell(value: Any, type_code: int | None, cell_chars: int) -> Cell:
    """One value as the model and the CSV see it; `type_code` is the cursor description's."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        # asyncmy hands BIT(n) over as big-endian bytes; the number is what was stored.
        if type_code == FIELD_TYPE.BIT:
            return int.from_bytes(data, "big")
        return describe_bytes(data)
    if isinstance(value, str):
        return cut(value, cell_chars)
    # DECIMAL, dates and times are short by nature and wrong when cut; only text is cut.
    text = _as_text(value)
    return text if _is_bounded(value) else cut(text, cell_chars)


def cut(text: str, cell_chars: int) -> str:
    """Keep the first `cell_chars` characters and say how many were left out."""
    if len(text) <= cell_chars:
        return text
    return f"{text[:cell_chars]}…[+{len(text) - cell_chars} chars]"


def describe_bytes(data: bytes) -> str:
    """Binary data is never passed on raw: its length and a hex prefix."""
    prefix = data[:_HEX_PREFIX_BYTES].hex()
    more = "…" if len(data) > _HEX_PREFIX_BYTES else ""
    unit = "byte" if len(data) == 1 else "bytes"
    return f"<{len(data)} {unit} 0x{prefix}{more}>"


def _is_bounded(value: Any) -> bool:
    return isinstance(value, Decimal | datetime.date | datetime.time | datetime.timedelta)


def _as_text(value: Any) -> str:
    if isinstance(value, Decimal):
        return str(value)  # exact: "12.50" stays "12.50", never a float
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")  # microseconds only when there are some
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return format_time(value)
    if isinstance(value, set | frozenset):
        return ",".join(sorted(str(item) for item in value))
    return str(value)


def format_time(value: datetime.timedelta) -> str:
    """A TIME column: "HH:MM:SS", hours past 24 and a sign allowed ("-838:59:59")."""
    micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    sign = "-" if micros < 0 else ""
    seconds, fraction = divmod(abs(micros), 1_000_000)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{sign}{hours:02d}:{minutes:02d}:{seconds:02d}"
    return f"{text}.{fraction:06d}" if fraction else text
