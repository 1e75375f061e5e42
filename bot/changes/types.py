"""A change waiting for its approvers, and what became of it, as tagged types: the pending
record (a model's paused call, a statement a person ran, an Undo), the decision shown to
the people in the conversation, and the verdict of one approver's decision (counted, denied,
approved)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from bot.db.impact_types import Impact
from bot.state.grants import GrantScope

# The kinds of pending change. TOOL_CALL: the model's paused execute_query, which the decision
# resumes; DIRECT: a statement a person ran (or an outside client's call), which resumes no
# model run; UNDO: the inverse of an approved change, asked for by a person.
TOOL_CALL = "tool_call"
DIRECT = "direct"
UNDO = "undo"


@dataclass(frozen=True, slots=True)
class PendingApproval:
    id: str
    session_id: str
    tool_call_id: str
    database: str
    environment: str
    risk: str
    sql: str
    requester: str  # the user ID of the person who asked
    created_at: float
    reason: str = ""  # the guard's words: why this statement needs an approver
    # "tool_call": the model's paused execute_query; "direct": a statement a person ran, which
    # resumes no model run.
    kind: str = TOOL_CALL
    impact: Impact | None = None  # what the change will touch, measured before anyone is asked
    request_text: str = ""  # the message that started the run: who asked, in their words
    # Four eyes: who has approved so far (distinct, in the order they approved), how many
    # must, and the scope each chose (a thread grant needs every approver to choose it).
    # kind "undo": the inverse of an approved change, asked for by a person.
    approvals: tuple[str, ...] = ()
    required: int = 1
    scopes: tuple[str, ...] = ()
    # Where the request came from when not a conversation thread: "mcp:<client name>".
    origin: str = ""
    # kind "undo": who approved the change it puts back, and when (said first).
    undoes_approver: str = ""
    undoes_approved_at: float = 0.0
    # The database role it runs under ([databases.access]); "" without an access map.
    role: str = ""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["impact"] = None if self.impact is None else self.impact.to_json()
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PendingApproval:
        # Fields added later have defaults, so records written before them still load.
        fields = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        impact = fields.get("impact")
        fields["impact"] = None if impact is None else Impact.from_json(impact)
        for name in ("approvals", "scopes"):
            fields[name] = tuple(fields.get(name) or ())
        return cls(**fields)


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    pending: PendingApproval
    approver: str
    approved: bool
    scope: str | None  # "once" | "thread" when approved
    summary: str  # "3 rows affected", "Error: …", "denied by U123; not executed"
    decided_at: float
    undo_id: str | None = None  # Agent.undo(undo_id) builds its inverse; None: no exact undo
    undo_reason: str = ""  # why there is no undo, when undo_id is None after a change ran


@dataclass(frozen=True, slots=True)
class Counted:
    """An approval counted; it waits for the next approver (four eyes)."""

    pending: PendingApproval


@dataclass(frozen=True, slots=True)
class Denied:
    """A deny took the record: the change does not run."""

    pending: PendingApproval


@dataclass(frozen=True, slots=True)
class Approved:
    """The approval that completed the count took the record: the change runs, once, with
    a grant of `scope` (a thread grant only when every approver chose it, never for an
    outside client's change)."""

    pending: PendingApproval
    scope: GrantScope


Verdict = Counted | Denied | Approved


class AlreadyDecided(Exception):
    """The approval or question was decided (or superseded) before this decision; nothing was
    done."""


class ApprovalExpired(AlreadyDecided):
    """The approval was never decided and is past its lifetime; nothing was done."""


class SelfApprovalRefused(Exception):
    """The person who asked for a change tried to approve it; nothing was done."""

    def __init__(self, pending_id: str, reason: str) -> None:
        super().__init__(reason)
        self.pending_id = pending_id
        self.reason = reason
