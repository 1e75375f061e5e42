"""Sessions: one conversation (a Slack thread, a console run), persisted after every step.

Stored as JSON by the state's session repository under the session id. The messages are
the chat completions messages (user, assistant with tool calls, tool results) without the
system prompt, which is rebuilt for every model call.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bot.agent.outcomes import Requester
from bot.config import Mode
from bot.state.sessions import Sessions as SessionRecords


class SessionStatus(StrEnum):
    IDLE = "idle"
    RUNNING = "running"
    AWAITING_APPROVAL = "awaiting_approval"
    AWAITING_REPLY = "awaiting_reply"  # the model asked the person a question (ask_user)
    FAILED = "failed"
    INTERRUPTED = "interrupted"  # the bot stopped while a run was going on


@dataclass
class Session:
    id: str
    mode: Mode
    messages: list[dict[str, Any]] = field(default_factory=list)
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    tokens_used: int = 0
    status: SessionStatus = SessionStatus.IDLE
    last_error: str | None = None
    pending_id: str | None = None
    question_id: str | None = None
    requester: Requester | None = None  # who wrote the last message
    iterations: int = 0  # model calls in the current run (a run spans approval pauses)
    # One token estimate per message, kept by compaction (see compaction.py).
    token_estimates: list[int] = field(default_factory=list)
    # One line for each exchange dropped to fit the budget, most recent last.
    earlier: list[str] = field(default_factory=list)
    # Who stopped the last run, until the model has heard of it with the next message.
    stopped_by: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "mode": self.mode.value,
            "messages": self.messages,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "tokens_used": self.tokens_used,
            "status": self.status.value,
            "last_error": self.last_error,
            "pending_id": self.pending_id,
            "question_id": self.question_id,
            "requester": None
            if self.requester is None
            else {
                "user_id": self.requester.user_id,
                "name": self.requester.name,
                "timezone": self.requester.timezone,
            },
            "iterations": self.iterations,
            "token_estimates": self.token_estimates,
            "earlier": self.earlier,
            "stopped_by": self.stopped_by,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Session:
        requester = data.get("requester")
        return cls(
            id=data["id"],
            mode=Mode(data.get("mode", Mode.ASK.value)),
            messages=list(data.get("messages") or []),
            created_at=float(data.get("created_at") or time.time()),
            updated_at=float(data.get("updated_at") or time.time()),
            tokens_used=int(data.get("tokens_used") or 0),
            status=SessionStatus(data.get("status", SessionStatus.IDLE.value)),
            last_error=data.get("last_error"),
            pending_id=data.get("pending_id"),
            question_id=data.get("question_id"),
            requester=Requester(**requester) if requester else None,
            iterations=int(data.get("iterations") or 0),
            token_estimates=[int(n) for n in data.get("token_estimates") or []],
            earlier=[str(line) for line in data.get("earlier") or []],
            stopped_by=data.get("stopped_by"),
        )


class Sessions:
    def __init__(self, records: SessionRecords) -> None:
        self._records = records

    async def load(self, session_id: str) -> Session | None:
        data = await self._records.get(session_id)
        return None if data is None else Session.from_json(data)

    async def load_or_create(self, session_id: str, mode: Mode) -> Session:
        return await self.load(session_id) or Session(id=session_id, mode=mode)

    async def save(self, session: Session) -> None:
        session.updated_at = time.time()
        await self._records.save(session.to_json())

    async def running(self) -> list[str]:
        """Ids of the sessions saved while a run was going on."""
        return await self._records.running()
