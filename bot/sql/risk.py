"""SQL risk classifier — placeholder types; the classifier body is being written."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Risk(StrEnum):
    """How much a statement can change. Ordered: read_only < write < ddl < transaction."""

    READ_ONLY = "read_only"
    WRITE = "write"
    DDL = "ddl"
    TRANSACTION = "transaction"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Risk.READ_ONLY: 0, Risk.WRITE: 1, Risk.DDL: 2, Risk.TRANSACTION: 3}


@dataclass(frozen=True, slots=True)
class TableRef:
    """A table (or database, for CREATE/DROP DATABASE) a statement writes or alters."""

    schema: str | None
    name: str


@dataclass(frozen=True, slots=True)
class Statement:
    text: str  # the statement's exact source text, without the separating ';'
    start: int  # offsets into the classified string: sql[start:end] == text
    end: int
    risk: Risk
    kind: str  # leading keywords, upper case: "SELECT", "INSERT", "CREATE TABLE", "UNKNOWN"
    reasons: tuple[str, ...]
    targets: tuple[TableRef, ...]  # what it writes or alters; empty for reads


@dataclass(frozen=True, slots=True)
class Classification:
    sql: str
    risk: Risk  # the highest risk of its statements
    statements: tuple[Statement, ...]
    reasons: tuple[str, ...]

    @property
    def is_read_only(self) -> bool:
        return self.risk is Risk.READ_ONLY


def classify(sql: str, dialect: str = "mysql") -> Classification:
    raise NotImplementedError
