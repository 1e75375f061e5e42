"""The SQL an answer proposes: stored per code block, and laid out with its buttons.

Every SQL block in an answer (up to `MAX_WITH_BUTTONS`) is stored among the state's
proposals under a fresh id, with the thread it was posted in and the database the answer names
(None: the person chooses). The buttons under the block carry that id only, so a click
can run nothing but SQL the bot itself posted there.

Layout: the answer is cut after each such block, and every part is converted and split
exactly as a plain answer is. The buttons follow their block in the same message; the
text after a block joins that message when the two fit one section's budget, so a short
answer stays one message.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from bot.ask.sql_blocks import SqlBlock, find_sql_blocks_off_loop
from bot.config import DatabaseConfig, Limits
from bot.slack import mrkdwn
from bot.slack.blocks import answer
from bot.slack.blocks import sql_actions as run_blocks
from bot.slack.blocks.common import Block
from bot.slack.sessions import Thread
from bot.state.proposals import Proposals as ProposalRecords

MAX_WITH_BUTTONS = 5  # SQL blocks per answer that get buttons; the rest are only shown
# Buttons stay usable for `[retention] proposals_days`; then a click says it is forgotten.
_MESSAGE_BLOCKS = 50  # Slack's limit per message


@dataclass(frozen=True, slots=True)
class Proposal:
    id: str
    session_id: str
    channel: str
    thread_ts: str
    sql: str
    database: str | None  # named by the answer; None: the person chooses
    created_at: float
    chosen: str | None = None  # the database picked in the message's menu, last pick

    @property
    def thread(self) -> Thread:
        return Thread.from_session_id(self.session_id)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, key: str, data: dict[str, Any]) -> Proposal:
        """A stored record (this class's own to_json()); TypeError or KeyError when it is
        not one."""
        return cls(
            id=key,
            session_id=_text(data["session_id"]),
            channel=_text(data["channel"]),
            thread_ts=_text(data["thread_ts"]),
            sql=_text(data["sql"]),
            database=_text_or_none(data.get("database")),
            created_at=float(data["created_at"]),
            chosen=_text_or_none(data.get("chosen")),
        )


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected text, got {type(value).__name__}")
    return value


def _text_or_none(value: object) -> str | None:
    return None if value is None else _text(value)


class Proposals:
    def __init__(
        self,
        records: ProposalRecords,
        databases: Sequence[DatabaseConfig],
        *,
        clock: Callable[[], float] = time.time,
        max_sql_chars: int = Limits().max_sql_chars,
    ) -> None:
        self._records = records
        self.databases = tuple(databases)
        self._clock = clock
        self.max_sql_chars = max_sql_chars

    @property
    def names(self) -> list[str]:
        return [database.name for database in self.databases]

    def known(self, name: object) -> str | None:
        """`name` when it is a configured database, else None."""
        return name if isinstance(name, str) and name in self.names else None

    async def add(self, thread: Thread, block: SqlBlock) -> Proposal:
        proposal = Proposal(
            id=uuid.uuid4().hex,
            session_id=thread.session_id,
            channel=thread.channel,
            thread_ts=thread.thread_ts,
            sql=block.sql,
            database=block.database,
            created_at=self._clock(),
        )
        await self._records.add(proposal.to_json())
        return proposal

    async def get(self, proposal_id: str) -> Proposal | None:
        if not proposal_id:
            return None
        data = await self._records.get(proposal_id)
        if not isinstance(data, dict) or not isinstance(data.get("sql"), str):
            return None
        try:
            return Proposal.from_json(proposal_id, data)
        except (KeyError, TypeError, ValueError):
            return None

    async def choose(self, proposal_id: str, database: str) -> bool:
        """Remember the database picked for a proposal; False when either is unknown."""
        if self.known(database) is None:
            return False

        return await self._records.choose(proposal_id, database)

    # -- layout -------------------------------------------------------------------------
    async def messages(self, thread: Thread, text: str) -> list[dict[str, Any]]:
        """The answer as messages: mrkdwn pieces as a plain answer, each SQL block's
        buttons right after it."""
        found = await find_sql_blocks_off_loop(text, self.names, max_sql_chars=self.max_sql_chars)
        with_buttons = found[:MAX_WITH_BUTTONS]
        parts: list[tuple[str, Block | None]] = []
        start = 0
        for block in with_buttons:
            parts.append((text[start : block.end], await self._buttons(thread, block)))
            start = block.end
        parts.append((text[start:], None))
        messages = _lay_out(parts)
        if len(found) > len(with_buttons) and messages:
            messages[-1]["blocks"].append(run_blocks.more_sql_note(len(with_buttons)))
        return messages

    async def _buttons(self, thread: Thread, block: SqlBlock) -> Block:
        proposal = await self.add(thread, block)
        return run_blocks.sql_actions(proposal.id, proposal.database, self.databases)


def _lay_out(parts: list[tuple[str, Block | None]]) -> list[dict[str, Any]]:
    """Messages from (answer part, buttons after it). Pieces of one part never share a
    message (as in a plain answer); the first piece after a part with buttons joins the
    buttons' message when their text fits one section."""
    messages: list[tuple[list[str], list[Block]]] = []
    joinable = False
    for text, buttons in parts:
        for index, piece in enumerate(answer.answer_pieces(text)):
            block = {"type": "markdown", "text": piece}
            if index == 0 and joinable and _fits(messages[-1], piece):
                messages[-1][0].append(piece)
                messages[-1][1].append(block)
            else:
                messages.append(([piece], [block]))
        joinable = False
        if buttons is not None:
            if not messages:
                messages.append(([], []))
            messages[-1][1].append(buttons)
            joinable = True
    return [
        {"text": _fallback("\n".join(texts)), "blocks": message_blocks}
        for texts, message_blocks in messages
    ]


def _fallback(markdown: str) -> str:
    """The notification text of a message of the answer: mrkdwn, short."""
    return mrkdwn.truncate(mrkdwn.to_mrkdwn(markdown), 3_000)[0] or "SQL"


def _fits(message: tuple[list[str], list[Block]], piece: str) -> bool:
    texts, message_blocks = message
    size = sum(len(text) + 1 for text in texts) + len(piece)
    return size <= mrkdwn.SECTION_TEXT_LIMIT and len(message_blocks) + 2 <= _MESSAGE_BLOCKS
