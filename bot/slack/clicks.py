"""A click on a button or menu in a message, as every action listener reads it, and the
private note that answers one.

The payload is trusted for who clicked, where, and which id the element carries (Slack
signed it); never for SQL. A replayed payload is recognised by its key (trigger id,
action time, user, action) and does nothing the second time.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from bot.slack import strings
from bot.slack.delivery import SLACK_ERRORS
from bot.slack.sessions import Thread
from bot.state import StateError

if TYPE_CHECKING:
    from bot.slack.services import Services

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Click:
    user: str
    action_id: str
    block_id: str | None
    value: str  # the button's value, or the chosen menu option's
    channel: str
    message_ts: str
    thread_ts: str
    trigger_id: str | None
    key: str  # the same for a replay of this very payload
    state: dict[str, Any]  # the message's inputs (menus) as the clicker left them
    team: str = "T"  # the workspace, as sessions name it

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> Click | None:
        """None when the payload lacks what any click needs."""
        try:
            action = body["actions"][0]
            user = body["user"]["id"]
            container = body.get("container") or {}
            message = body.get("message") or {}
            channel = (body.get("channel") or {}).get("id") or container["channel_id"]
            message_ts = container.get("message_ts") or message["ts"]
        except (KeyError, IndexError, TypeError, AttributeError):
            return None
        selected = action.get("selected_option") or {}
        value = action.get("value") if "value" in action else selected.get("value")
        trigger_id = body.get("trigger_id")
        action_ts = action.get("action_ts")
        if not (trigger_id or action_ts):
            return None  # nothing to tell a replay from a new click by
        thread_ts = message.get("thread_ts") or container.get("thread_ts") or message_ts
        state = (body.get("state") or {}).get("values") or {}
        team = (body.get("team") or {}).get("id") or (body.get("user") or {}).get("team_id")
        return cls(
            user=str(user),
            action_id=str(action.get("action_id")),
            block_id=action.get("block_id") if isinstance(action.get("block_id"), str) else None,
            value=value if isinstance(value, str) else "",
            channel=str(channel),
            message_ts=str(message_ts),
            thread_ts=str(thread_ts),
            trigger_id=trigger_id if isinstance(trigger_id, str) else None,
            key=f"{trigger_id}:{action_ts}:{user}:{action.get('action_id')}",
            state=state if isinstance(state, dict) else {},
            team=team if isinstance(team, str) and team else "T",
        )

    def to_json(self) -> dict[str, Any]:
        """The click as JSON, for the replica that can act on it (bot/state/stops.py)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Click | None:
        """A forwarded click; None when it is not one."""
        texts = ("user", "action_id", "value", "channel", "message_ts", "thread_ts", "key", "team")
        optional = ("block_id", "trigger_id")
        if not all(isinstance(data.get(name), str) for name in texts):
            return None
        if not all(data.get(name) is None or isinstance(data[name], str) for name in optional):
            return None
        state = data.get("state")
        fields = {name: data[name] for name in texts} | {name: data.get(name) for name in optional}
        return cls(**fields, state=state if isinstance(state, dict) else {})

    @property
    def thread(self) -> Thread:
        """The thread the clicked message is in."""
        return Thread(self.team, self.channel, self.thread_ts)

    def selected(self, block_id: str, action_id: str) -> str | None:
        """The value chosen in a menu of the message, as the clicker's payload says."""
        element = (self.state.get(block_id) or {}).get(action_id) or {}
        option = element.get("selected_option") if isinstance(element, dict) else None
        value = option.get("value") if isinstance(option, dict) else None
        return value if isinstance(value, str) else None


async def first_time(services: Services, click: Click) -> bool:
    if await services.dedupe.first_interaction(click.key):
        return True
    log.info("replayed %s by %s ignored", click.action_id, click.user)
    return False


async def tell_clicker(services: Services, click: Click, text: str) -> None:
    """A message in the thread that only the person who clicked sees."""
    try:
        await services.client.chat_postEphemeral(
            channel=click.channel, user=click.user, thread_ts=click.thread_ts, text=text
        )
    except SLACK_ERRORS as exc:
        log.warning("ephemeral message to %s failed: %s", click.user, exc)


ClickHandler = Callable[["Services", Click], Awaitable[None]]


def refused_when_the_store_fails(handler: ClickHandler) -> ClickHandler:
    """A click met with the state store out of reach is refused with a note in its thread.

    Never left to Bolt: an error raised right after the acknowledgement can reach Bolt
    before it sent that acknowledgement, and Slack then gets 404 and the clicker nothing."""

    @functools.wraps(handler)
    async def handled(services: Services, click: Click) -> None:
        try:
            await handler(services, click)
        except StateError as exc:
            log.error("%s by %s refused: %s", click.action_id, click.user, exc)
            await tell_clicker(services, click, strings.CLICK_STORE_DOWN.format(error=exc))

    return handled
