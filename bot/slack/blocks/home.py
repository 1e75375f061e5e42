"""The App Home tab and the suggested prompts of assistant threads.

Home, for everyone: the databases dbagent can reach (environment, description) and how to
ask. For an approver, above that: the approval cards waiting for them, oldest first, each
with its database, the head of its SQL, who asked, how long ago, and a link to its thread.
Built by plain functions from plain data; `publish_home` gathers the data and calls
`views.publish`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.changes.types import PendingApproval
from bot.config import DatabaseConfig
from bot.slack import mrkdwn, strings
from bot.slack.blocks.approval_card import requested_by
from bot.slack.sessions import Thread

Block = dict[str, Any]

HOME_CARDS = 15  # each card is two blocks; a Home tab holds 100
SQL_HEAD_CHARS = 120
PROMPTS = 4  # Slack shows at most four suggested prompts
_ENVIRONMENT_ICONS = {
    "production": ":red_circle:",
    "staging": ":large_yellow_circle:",
    "development": ":large_green_circle:",
}


@dataclass(frozen=True, slots=True)
class WaitingCard:
    pending: PendingApproval
    link: str | None  # the thread's permalink, when known
    # Asked in a public channel (bot.slack.privacy): only then does Home show its SQL.
    public: bool = False


def _section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _header(text: str) -> Block:
    return {"type": "header", "text": {"type": "plain_text", "text": text, "emoji": True}}


def sql_head(sql: str) -> str:
    return mrkdwn.sql_inline(sql, SQL_HEAD_CHARS)


def _card(card: WaitingCard, now: float) -> list[Block]:
    pending = card.pending
    line = strings.HOME_CARD_LINE.format(
        database=mrkdwn.escape(pending.database),
        environment=mrkdwn.escape(pending.environment),
        who=requested_by(pending),
        age=strings.age(max(0.0, now - pending.created_at)),
        sql=sql_head(pending.sql) if card.public else strings.HOME_PRIVATE_SQL,
    )
    section = _section(line)
    if card.link:
        section["accessory"] = {
            "type": "button",
            "action_id": f"home_open_thread_{pending.id}"[:255],
            "text": {"type": "plain_text", "text": strings.HOME_OPEN_THREAD},
            "url": card.link,
        }
    return [section]


def _database(database: DatabaseConfig) -> Block:
    environment = database.environment.value
    icon = _ENVIRONMENT_ICONS.get(environment, ":white_circle:")
    text = f"*{mrkdwn.escape(database.name)}* · {icon} {mrkdwn.escape(environment)}"
    if environment == "production":
        text += f" · {strings.HOME_READ_ONLY}"
    if database.description:
        text += f"\n{mrkdwn.escape(database.description)}"
    return _section(text)


def home_view(
    databases: Sequence[DatabaseConfig],
    waiting: Sequence[WaitingCard] | None,
    *,
    now: float | None = None,
) -> dict[str, Any]:
    """The Home tab. `waiting` is None for someone who is not an approver (no approvals
    section at all), a list (maybe empty) for an approver."""
    now = time.time() if now is None else now
    blocks: list[Block] = [_header(strings.HOME_TITLE), _section(strings.HOME_INTRO)]
    if databases:
        example = strings.HOME_EXAMPLE.format(database=mrkdwn.escape(databases[0].name))
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": example}]})
    if waiting is not None:
        blocks += [{"type": "divider"}, _header(strings.HOME_WAITING)]
        ordered = sorted(waiting, key=lambda card: card.pending.created_at)
        if not ordered:
            blocks.append(_section(strings.HOME_NOTHING_WAITING))
        for card in ordered[:HOME_CARDS]:
            blocks += _card(card, now)
        if len(ordered) > HOME_CARDS:
            more = strings.HOME_MORE_WAITING.format(count=len(ordered) - HOME_CARDS)
            blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": more}]})
    blocks += [{"type": "divider"}, _header(strings.HOME_DATABASES)]
    if not databases:
        blocks.append(_section(strings.HOME_NO_DATABASES))
    room = 100 - len(blocks)
    blocks += [_database(database) for database in databases[:room]]
    return {"type": "home", "blocks": blocks}


def thread_link(team_url: str | None, thread: Thread) -> str | None:
    """A permalink to the thread's first message, from the workspace URL auth.test gives."""
    if not team_url:
        return None
    base = team_url if team_url.endswith("/") else team_url + "/"
    return f"{base}archives/{thread.channel}/p{thread.thread_ts.replace('.', '')}"


def suggested_prompts(databases: Sequence[DatabaseConfig]) -> list[dict[str, str]]:
    """Up to four starting points for an assistant thread, built from the databases."""
    prompts: list[dict[str, str]] = []
    for database in databases[:2]:
        question = strings.PROMPT_TABLES.format(database=database.name)
        prompts.append({"title": question, "message": question})
    if databases:
        recent = strings.PROMPT_RECENT.format(database=databases[0].name)
        prompts.append({"title": recent[:75], "message": recent})
    prompts.append({"title": strings.PROMPT_HELP, "message": strings.PROMPT_HELP_TEXT})
    return prompts[:PROMPTS]
