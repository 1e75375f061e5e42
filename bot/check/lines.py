"""One line of `dbagent check`: ✓ passed, ! passed with a warning, ✗ failed with the fix."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Mark(StrEnum):
    PASSED = "✓"
    WARNING = "!"
    FAILED = "✗"


@dataclass(frozen=True, slots=True)
class Line:
    mark: Mark
    subject: str
    detail: str
    fix: str = ""

    def render(self) -> str:
        text = f"{self.mark} {self.subject}: {self.detail}"
        return f"{text} — fix: {self.fix}" if self.fix else text


def passed(subject: str, detail: str) -> Line:
    return Line(Mark.PASSED, subject, detail)


def warning(subject: str, detail: str, fix: str) -> Line:
    return Line(Mark.WARNING, subject, detail, fix)


def failed(subject: str, detail: str, fix: str) -> Line:
    return Line(Mark.FAILED, subject, detail, fix)
