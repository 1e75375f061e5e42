"""What a run ends in, as tagged types: Answer | AwaitingApproval | AwaitingReply | Failed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from bot.changes.types import PendingApproval
from bot.db.types import Cell

StepStatus = Literal["in_progress", "complete", "error"]


@dataclass(frozen=True, slots=True)
class Step:
    """One tool step of a run, as it starts and as it ends (the same `id` for both): a title
    such as "Running query on shop-staging", and details such as "3 rows returned"."""

    id: str
    title: str
    status: StepStatus
    details: str = ""


# Called with each Step while a run works.
Progress = Callable[[Step], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Requester:
    user_id: str
    name: str = ""
    timezone: str = "UTC"  # IANA name, from the person's Slack profile
    # The user groups among those the configuration names (unmasked_for) that hold them.
    groups: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class QueryResult:
    """A result set the answer rests on, for the person (preview table + CSV)."""

    database: str
    sql: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    truncated: bool
    # The chart the model asked for ({type, x, y, title?}); the adapter draws it from
    # `rows`, never from numbers the model wrote, or says why it cannot.
    chart: dict[str, Any] | None = None
    # One line naming the masked columns and why ("" when none was): shown with the rows.
    masked: str = ""
    note: str | None = None  # said with the result (e.g. read on the primary, not the replica)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> QueryResult:
        return cls(
            database=data["database"],
            sql=data["sql"],
            columns=tuple(data["columns"]),
            rows=tuple(tuple(row) for row in data["rows"]),
            truncated=bool(data["truncated"]),
            chart=data.get("chart"),
            masked=str(data.get("masked") or ""),
            note=data.get("note"),
        )


@dataclass(frozen=True, slots=True)
class Answer:
    text: str
    results: tuple[QueryResult, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class AwaitingApproval:
    pending: PendingApproval
    text: str = ""  # anything the model said before asking
    results: tuple[QueryResult, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class Option:
    label: str
    value: str


@dataclass(frozen=True, slots=True)
class Question:
    """The model's question back to the person (the ask_user tool); the run waits for it."""

    id: str
    session_id: str
    tool_call_id: str
    kind: str  # confirm | choose | input
    text: str
    options: tuple[Option, ...]
    requester: str  # only this person may answer
    created_at: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Question:
        fields = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        fields["options"] = tuple(Option(**option) for option in data.get("options") or ())
        return cls(**fields)


@dataclass(frozen=True, slots=True)
class AwaitingReply:
    question: Question
    text: str = ""  # anything the model said before asking
    results: tuple[QueryResult, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class Failed:
    message: str  # short, for the person; details go to the log
    # Rows fetched before the failure, each with its SQL: still the person's to see.
    results: tuple[QueryResult, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class Stopped(Failed):
    """The run was stopped by a person (`by`: their user id) before it finished."""

    by: str = ""


Outcome = Answer | AwaitingApproval | AwaitingReply | Failed


@dataclass(frozen=True, slots=True)
class RunResumable:
    """A run the last process left going while it was reading or thinking: nothing it did
    can be repeated by going on, so `Agent.resume` carries it on."""

    session_id: str
    requester: str


@dataclass(frozen=True, slots=True)
class RunInterrupted:
    """A run the last process left going while a statement that may change data was
    outstanding: it is not resumed; the person is told what was running and what to do."""

    session_id: str
    requester: str
    database: str
    sql: str
    outcome: str = ""  # what its write-ahead record says became of it, when it finished

    @property
    def text(self) -> str:
        if self.outcome:
            return (
                f"The bot restarted after this statement ran on {self.database} "
                f"({self.outcome}), before its answer was kept:\n{self.sql}"
            )
        return (
            f"The bot restarted while this statement was running on {self.database}; it may "
            "or may not have been applied. Check the data before you ask for it again:\n"
            f"{self.sql}"
        )


@dataclass(frozen=True, slots=True)
class Interrupted:
    """An approved change the bot stopped while running (found at start). Never re-run;
    `text` tells the thread plainly what ran, where, and how to check."""

    execution_id: str
    session_id: str
    database: str
    environment: str
    sql: str
    requester: str
    approver: str | None
    started_at: float
    # True: applied (its rows hold what it wrote); False: not applied; None: may or may not be.
    applied: bool | None
    text: str
    undo_id: str | None = None  # set when it was applied and can be undone exactly
    pending_id: str | None = None  # the approval whose card showed it


# What `Agent.recover` found at start.
Recovered = RunResumable | RunInterrupted | Interrupted


class NotYourQuestion(Exception):
    """Someone other than the person the question was asked of tried to answer it."""
