"""What the data layer hands back: rendered, JSON-safe results and errors worded for people."""

from __future__ import annotations

from dataclasses import dataclass, field

# A rendered cell: DECIMAL, dates, JSON and long text arrive as str; BLOBs as "<N bytes 0x…>".
Cell = str | int | float | bool | None


class DbError(Exception):
    """A failure worded for the model and the user, e.g. "cannot connect to shop-staging (…)".

    `outcomes` holds the statements of a multi-statement run that finished before it failed.
    """

    def __init__(self, message: str, outcomes: tuple[StatementOutcome, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.outcomes = outcomes


class Unreachable(DbError):
    """No connection could be opened (nothing ran): another server may take the work."""


class MissingPrivilege(DbError):
    """The server refused a statement for a privilege its account (or role) lacks."""

    # table, column, database access denied; command/routine/proc denied; SUPER-like needed
    CODES = frozenset({1142, 1143, 1044, 1227, 1370, 1045})

    def __init__(
        self,
        message: str,
        outcomes: tuple[StatementOutcome, ...] = (),
        *,
        code: int,
        server: str,
    ) -> None:
        super().__init__(message, outcomes)
        self.code = code
        self.server = server


class UnknownObject(DbError):
    """An unknown database or table; the message lists the closest names."""


@dataclass(frozen=True, slots=True)
class ResultSet:
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    truncated: bool  # exact: the statement had more rows than were fetched

    @property
    def row_count(self) -> int:
        return len(self.rows)


@dataclass(frozen=True, slots=True)
class StatementOutcome:
    sql: str
    result: ResultSet | None  # None for statements that return no rows
    affected_rows: int | None
    last_insert_id: int | None
    duration_ms: float


@dataclass(frozen=True, slots=True)
class Execution:
    database: str
    outcomes: tuple[StatementOutcome, ...] = field(default_factory=tuple)
    # Set when reads meant for the replica ran on the primary (the replica is unreachable).
    note: str | None = None

    @property
    def last_result(self) -> ResultSet | None:
        """The model sees the last result set of a multi-statement run."""
        for outcome in reversed(self.outcomes):
            if outcome.result is not None:
                return outcome.result
        return None

    @property
    def duration_ms(self) -> float:
        return sum(outcome.duration_ms for outcome in self.outcomes)
