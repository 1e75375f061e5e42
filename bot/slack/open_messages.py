"""Approval cards and questions still showing buttons, per thread, so one that a newer
message replaced (or answered) can say so.

A new message in a thread replaces the approval or question its run was waiting for (the
agent drops the pending record); an input question is answered by the asker's next
message. Without an update the message would keep live-looking buttons that can only say
"already decided", or keep asking for a reply. Kept in memory: after a restart an old card
or question keeps its buttons, and a click on it is answered privately.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

Item = TypeVar("Item")


@dataclass(frozen=True, slots=True)
class OpenMessage(Generic[Item]):
    item: Item  # the pending approval or the question the message shows
    channel: str
    ts: str


class OpenMessages(Generic[Item]):
    """The open message of one kind per session; `id_of` names the item it shows."""

    def __init__(self, id_of: Callable[[Item], str]) -> None:
        self._id_of = id_of
        self._by_session: dict[str, OpenMessage[Item]] = {}

    def get(self, session: str) -> OpenMessage[Item] | None:
        return self._by_session.get(session)

    def remember(self, session: str, item: Item | None, channel: str, ts: str | None) -> None:
        if item is not None and ts is not None:
            self._by_session[session] = OpenMessage(item, channel, ts)

    def forget(self, session: str, item_id: str) -> None:
        """A click decided it (and updated the message itself)."""
        message = self._by_session.get(session)
        if message is not None and self._id_of(message.item) == item_id:
            del self._by_session[session]

    def take_if_gone(
        self, session: str, before: OpenMessage[Item] | None, *, still_open: bool
    ) -> bool:
        """After a run begun with `before` open: True (and forgotten) when its item is gone
        and no click decided it, so the message is the caller's to close."""
        if before is None or self._by_session.get(session) is not before or still_open:
            return False
        del self._by_session[session]
        return True
