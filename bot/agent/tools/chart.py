"""The `chart` parameter of execute_query: which columns of the result to draw, and how.

The model names columns; the numbers drawn are always the result's own rows. A spec that
names a column the result lacks, or plots a column that is not numeric, is refused with the
reason, so the model can fix it (or aggregate) instead of a person seeing a wrong picture.
Limits of a particular chat surface (points, series) are the adapter's to apply.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bot.db.types import Cell

MAX_SERIES = 6  # more lines or bar groups than this cannot be told apart
MAX_POINTS = 20  # x values a chart can label legibly
MAX_SLICES = 6  # slices of a pie


class ChartType(StrEnum):
    BAR = "bar"
    LINE = "line"
    AREA = "area"
    PIE = "pie"


class ChartSpec(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: ChartType = Field(description="bar, line, area or pie.")
    x: str = Field(description="The result column holding the labels (categories, dates).")
    y: list[str] = Field(
        min_length=1,
        max_length=MAX_SERIES,
        description=(
            f"Result columns holding the numbers, one series each (1 to {MAX_SERIES}; "
            "a pie takes exactly one)."
        ),
    )
    title: str | None = Field(default=None, description="A short title (50 characters).")

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


# DECIMAL columns arrive as exact text ("12.50"): text that is a plain number counts.
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def as_number(cell: Cell) -> int | float | None:
    """The cell as a number to draw, or None when it is not one (NULL, text, a flag)."""
    if isinstance(cell, bool) or cell is None:
        return None
    if isinstance(cell, int | float):
        return cell if math.isfinite(cell) else None
    if isinstance(cell, str) and _NUMBER.match(cell.strip()):
        value = Decimal(cell.strip())
        return (
            int(value) if value == value.to_integral_value() and "." not in cell else float(value)
        )
    return None


def is_number(cell: Cell) -> bool:
    return as_number(cell) is not None


def chart_problem(
    spec: ChartSpec,
    columns: tuple[str, ...],
    rows: tuple[tuple[Cell, ...], ...],
    *,
    truncated: bool = False,
) -> str | None:
    """Why this spec cannot be drawn from these rows, in words for the model; None when it
    can. NULLs are allowed here (the adapter says whether it can draw them); any other
    non-number is not."""
    missing = [name for name in (spec.x, *spec.y) if name not in columns]
    if missing:
        return (
            f"chart: no column {', '.join(repr(m) for m in missing)} in the result "
            f"(columns: {', '.join(columns)})"
        )
    if spec.type is ChartType.PIE and len(spec.y) != 1:
        return "chart: a pie chart takes exactly one y column"
    if len(set(spec.y)) != len(spec.y):
        return "chart: y names the same column twice"
    if not rows:
        return "chart: the result has no rows to draw"
    if truncated:
        return "chart: the result was cut at the row limit, so a chart of it would be partial"
    most = MAX_SLICES if spec.type is ChartType.PIE else MAX_POINTS
    if len(rows) > most:
        return (
            f"chart: {len(rows)} rows are too many points (at most {most}); aggregate "
            "(GROUP BY a coarser unit) or keep the top rows (ORDER BY … LIMIT)"
        )
    for name in spec.y:
        index = columns.index(name)
        bad = next(
            (row[index] for row in rows if row[index] is not None and not is_number(row[index])),
            None,
        )
        if bad is not None:
            return f"chart: column {name!r} is not numeric (it holds {str(bad)[:40]!r})"
    return None
