"""Sessions: one conversation (a Slack thread, a console run), persisted after every step.

Stored as JSON by the state's session repository under the session id. The messages are
the chat completions messages (user, assistant with tool calls, tool results) without the
system prompt, which is rebuilt for every model call.

A save writes what changed since the session was loaded or last saved (the repository's
`update`): the rest of the record, the messages appended, and the drop of those fitting
left out, so its cost does not grow with the thread. What changed is told by identity: a
message is never changed in place but replaced by a new dict (as compaction does). One
whose top-level values were reassigned in place anyway is caught too, its values being
kept and compared; a change deeper inside (in a tool call's arguments) is not.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from bot.agent.outcomes import Requester
from bot.config import Mode
from bot.state.sessions import HistoryUpdate
from bot.state.sessions import Sessions as SessionRecords

Message = dict[str, Any]


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
    # What the store holds of the history, as this object last loaded or saved it.
    stored: StoredHistory | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {**self.head(), "messages": self.messages}

    def head(self) -> dict[str, Any]:
        """The record without its messages."""
        return {
            "id": self.id,
            "mode": self.mode.value,
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
            requester=_requester(requester) if requester else None,
            iterations=int(data.get("iterations") or 0),
            token_estimates=[int(n) for n in data.get("token_estimates") or []],
            earlier=[str(line) for line in data.get("earlier") or []],
            stopped_by=data.get("stopped_by"),
        )


Shape = tuple[Any, ...]


def _shape(message: Message) -> Shape:
    """A message's top-level keys and values. Compared as tuples: an unchanged value is the
    same object (a check of identity), a value reassigned in place is compared by value."""
    return (*message, *message.values())


@dataclass(frozen=True, slots=True)
class StoredHistory:
    """The stored history as one object last loaded or saved it: its version, the position of
    its first message, and the messages themselves with their shapes."""

    version: str
    start: int
    messages: list[Message]
    shapes: list[Shape]

    @classmethod
    def of(cls, version: str, start: int, messages: list[Message]) -> StoredHistory:
        return cls(version, start, list(messages), [_shape(m) for m in messages])

    def intact(self) -> bool:
        """Whether no message of it was changed in place since (it may be kept for a reload)."""
        return all(_shape(m) == shape for m, shape in zip(self.messages, self.shapes, strict=True))

    def changes_to(self, session: Session) -> tuple[HistoryUpdate, StoredHistory]:
        """The change that brings the store from this history to the session's, and what the
        store will hold once it is applied (still to be given the new version)."""
        messages = session.messages
        start, shapes = self._start_of(messages), [_shape(m) for m in messages]
        offset, written = start - self.start, {}
        for index, message in enumerate(messages):
            at = offset + index
            if not (
                0 <= at < len(self.messages)
                and self.messages[at] is message
                and self.shapes[at] == shapes[index]
            ):
                written[start + index] = message
        change = HistoryUpdate(
            head=session.head(),
            version=self.version,
            before=(self.start, self.start + len(self.messages)),
            start=start,
            end=start + len(messages),
            written=written,
        )
        return change, StoredHistory("", start, list(messages), shapes)

    def _start_of(self, messages: list[Message]) -> int:
        """The position of `messages[0]`: where the first stored message still there stands
        (fitting drops the oldest), or past the stored ones when none is."""
        if messages:
            first = messages[0]
            for at, message in enumerate(self.messages):
                if message is first:
                    return self.start + at
            positions = {id(m): at for at, m in enumerate(self.messages)}
            for index, message in enumerate(messages):
                found = positions.get(id(message))
                if found is not None:
                    return self.start + found - index
        return self.start + len(self.messages)


KEPT_HISTORIES = 128  # the recently used sessions whose decoded history is kept for a reload


class Sessions:
    """Loads and saves sessions. The history last loaded or saved of each recent session is
    kept decoded: a load whose stored version is still that one reads only the rest of the
    record, so a turn does not decode the whole history again either."""

    def __init__(self, records: SessionRecords) -> None:
        self._records = records
        self._kept: OrderedDict[str, StoredHistory] = OrderedDict()

    async def load(self, session_id: str) -> Session | None:
        kept = self._kept.pop(session_id, None)
        if kept is not None and not kept.intact():
            kept = None
        stored = await self._records.load(session_id, known=None if kept is None else kept.version)
        if stored is None:
            return None
        if stored.same and kept is not None:
            session = Session.from_json({**stored.record, "messages": kept.messages})
            session.stored = kept
        else:
            session = Session.from_json(stored.record)
            if stored.version:  # else stored whole by an earlier version: saved whole next
                session.stored = StoredHistory.of(stored.version, stored.start, session.messages)
        self._keep(session)
        return session

    async def load_or_create(self, session_id: str, mode: Mode) -> Session:
        return await self.load(session_id) or Session(id=session_id, mode=mode)

    async def save(self, session: Session) -> None:
        """Store what changed since the session was loaded or saved; the whole session when
        it is new here, or when the store holds another version than this object last saw
        (a save of its own cut off by a stop, another process's)."""
        session.updated_at = time.time()
        if session.stored is not None:
            change, after = session.stored.changes_to(session)
            version = await self._records.update(change)
            if version is not None:
                session.stored = replace(after, version=version)
                self._keep(session)
                return
        after = StoredHistory.of("", 0, session.messages)
        version = await self._records.save(session.to_json())
        session.stored = replace(after, version=version)
        self._keep(session)

    def _keep(self, session: Session) -> None:
        if session.stored is None:
            return
        self._kept[session.id] = session.stored
        self._kept.move_to_end(session.id)
        while len(self._kept) > KEPT_HISTORIES:
            self._kept.popitem(last=False)

    async def running(self) -> list[str]:
        """Ids of the sessions saved while a run was going on."""
        return await self._records.running()


def _requester(data: dict[str, Any]) -> Requester:
    return Requester(**{**data, "groups": tuple(data.get("groups") or ())})
