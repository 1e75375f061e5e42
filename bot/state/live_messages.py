"""The messages a run keeps open while it works — its streamed message and its working
message (with Stop) — by session, in the shared store.

A run remembers each as it opens it and forgets it as it closes it, so after a crash
whichever process takes the session up (the restart, or on a fleet the replica that sees
the session's lease expire) finds what was left open and closes it with what happened.
`take` is the claim: of the processes racing to close one message, exactly one gets it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from bot.state.posted import PostedMessage, PostedMessages

LiveKind = Literal["stream", "working"]
KINDS: tuple[LiveKind, ...] = ("stream", "working")


@dataclass(frozen=True, slots=True)
class LiveMessage:
    kind: LiveKind
    session_id: str
    channel: str
    ts: str
    opened_at: float

    @property
    def id(self) -> str:
        return f"{self.session_id}|{self.ts}"


class LiveMessages:
    def __init__(self, posted: PostedMessages, clock: Callable[[], float] = time.time) -> None:
        self._posted = posted
        self._clock = clock

    async def opened(self, kind: LiveKind, session_id: str, channel: str, ts: str) -> None:
        message = LiveMessage(kind, session_id, channel, ts, self._clock())
        await self._posted.remember(
            PostedMessage(kind, message.id, session_id, channel, ts, message.opened_at)
        )

    async def closed(self, kind: LiveKind, session_id: str, ts: str) -> None:
        """The run closed it itself: nothing to do after a crash."""
        await self._posted.take(kind, f"{session_id}|{ts}")

    async def left_open(self, session_id: str) -> list[LiveMessage]:
        """What the session's runs opened and did not close, oldest first per kind."""
        found = []
        for kind in KINDS:
            for posted in await self._posted.open_in(session_id, kind):
                found.append(
                    LiveMessage(kind, session_id, posted.channel, posted.ts, posted.posted_at)
                )
        return found

    async def take(self, message: LiveMessage) -> bool:
        """Claim the message to close it: True for exactly one caller."""
        return await self._posted.take(message.kind, message.id) is not None
