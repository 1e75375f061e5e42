"""Approval cards and questions still showing buttons, per thread, so one that a newer
message replaced (or answered), or a restart cut off, can say so.

A new message in a thread replaces the approval or question its run was waiting for (the
agent drops the pending record); an input question is answered by the asker's next
message. Without an update the message would keep live-looking buttons that can only say
"already decided", or keep asking for a reply. Kept in the state store: whichever replica
handles the thread's next message closes it, and it is still known after a restart.
Closing takes the record first (one atomic step), so a message is updated once however
many replicas or clicks race for it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from bot.state import StateError
from bot.state.posted import Kind, PostedMessage, PostedMessages

log = logging.getLogger(__name__)


class Shown(Protocol):
    @property
    def id(self) -> str: ...

    def to_json(self) -> dict[str, Any]: ...


Item = TypeVar("Item", bound=Shown)


@dataclass(frozen=True, slots=True)
class OpenMessage(Generic[Item]):
    item: Item  # the pending approval or the question the message shows
    channel: str
    ts: str


class OpenMessages(Generic[Item]):
    """The open messages of one kind; `load` reads the item back from its JSON."""

    def __init__(
        self,
        posted: PostedMessages,
        kind: Kind,
        load: Callable[[dict[str, Any]], Item],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._posted = posted
        self._kind: Kind = kind
        self._load = load
        self._clock = clock

    async def remember(self, session: str, item: Item | None, channel: str, ts: str | None) -> None:
        if item is None or ts is None:
            return
        message = PostedMessage(
            kind=self._kind,
            id=item.id,
            session_id=session,
            channel=channel,
            ts=ts,
            posted_at=self._clock(),
            item=item.to_json(),
        )
        await self._posted.remember(message)

    async def open_in(self, session: str) -> list[OpenMessage[Item]]:
        return [self._open(message) for message in await self._posted.open_in(session, self._kind)]

    async def get(self, item_id: str) -> OpenMessage[Item] | None:
        message = await self._posted.get(self._kind, item_id)
        return None if message is None else self._open(message)

    async def take(self, item_id: str) -> OpenMessage[Item] | None:
        """The message, forgotten, for the caller to update; None when someone else (a
        click, another replica) took it first, or it is not known."""
        message = await self._posted.take(self._kind, item_id)
        return None if message is None else self._open(message)

    async def forget(self, item_id: str) -> None:
        """A click decided it (and updates the message itself)."""
        try:
            await self._posted.take(self._kind, item_id)
        except StateError as exc:  # the click goes on; the record expires in its time
            log.error("open %s %s not forgotten: %s", self._kind, item_id, exc)

    def _open(self, message: PostedMessage) -> OpenMessage[Item]:
        return OpenMessage(self._load(message.item), message.channel, message.ts)
