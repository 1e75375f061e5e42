"""The Slack app under test: the real Bolt app and slack_sdk client, served over HTTP on a
random port, talking to the fake Slack Web API, the fake model server and the real MariaDB.

Tests send signed Events API and interactivity requests (`SlackHarness.mention`, `.dm`,
`.reply`, `.click`) and read what the app did from the fake Slack.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import hmac
import itertools
import json
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_bolt.listener.async_listener_completion_handler import (
    AsyncListenerCompletionHandler,
)

from bench.datasets import connect
from bot.agent import Agent, ModelClient
from bot.app import App as Parts
from bot.app import build_app as build_parts
from bot.config import ConnectionTarget, DatabaseConfig, Limits, Settings
from bot.db import DatabaseRegistry
from bot.slack.app import build_app, services_of_app
from bot.slack.listeners.actions.stop_run import listen_for_forwarded_stops
from bot.slack.recovery import take_up, tell_interrupted
from bot.slack.server import EVENTS_PATH, build_web_app
from bot.slack.web_api import api_session, make_client
from bot.state import State, open_state
from tests.fakes.local import serve_locally
from tests.fakes.model_server import FakeModelServer
from tests.fakes.slack_server import BOT_USER_ID, TEAM_ID, FakeSlack, Message, OpenedView
from tests.schemas import run_schema

# asyncmy logs server notes such as "database exists" for CREATE … IF NOT EXISTS.
logging.getLogger("asyncmy").setLevel(logging.ERROR)

SCHEMA = run_schema("dbagent_t_slack")
STAGING = "shop-staging"
PRODUCTION = "shop-prod"
SIGNING_SECRET = "test-signing-secret"
BOT_TOKEN = "xoxb-test-token"

ASKER = "U0ASKER"
APPROVER = "U0APPROVER"
GROUP = "S0ONCALL"
GROUP_MEMBER = "U0ONCALL"
BYSTANDER = "U0BYSTANDER"
CHANNEL = "C0SHOP"
DM = "D0ASKER"
AUDIT_CHANNEL = "C0AUDIT"
PRIVATE_CHANNEL = "C0PRIVATE"  # conversations.info says is_private

SHOP = [
    f"CREATE DATABASE IF NOT EXISTS {SCHEMA}",
    f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.orders (
        id INT PRIMARY KEY,
        customer VARCHAR(100) NOT NULL,
        status VARCHAR(20) NOT NULL,
        total DECIMAL(10,2) NOT NULL
    ) COMMENT='one row per order'""",
    f"DELETE FROM {SCHEMA}.orders",
    f"INSERT INTO {SCHEMA}.orders VALUES (10, 'Ada', 'paid', 20.00), "
    "(11, 'Ada & Co <ltd>', 'pending', 5.50), (12, 'Linus', 'pending', 12.00), "
    "(13, '=HYPERLINK(\"x\")', 'shipped', 99.99)",
]


async def run_sql(url: str, statements: list[str]) -> list[tuple[Any, ...]]:
    """Run statements behind the bot's back; returns the last one's rows."""
    connection = await connect(url)
    rows: list[tuple[Any, ...]] = []
    try:
        async with connection.cursor() as cursor:
            for statement in statements:
                await cursor.execute(statement)
                rows = list(await cursor.fetchall() or [])
    finally:
        connection.close()
    return rows


@pytest.fixture
async def shop_url(mysql_url: str) -> str:
    await run_sql(mysql_url, SHOP)
    target = ConnectionTarget.parse(mysql_url)
    password = target.password.get_secret_value()
    credentials = f"{target.user}:{password}" if password else target.user
    return f"mysql://{credentials}@{target.host}:{target.port}/{SCHEMA}"


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    server = FakeSlack(
        users={
            ASKER: "Europe/Paris",
            APPROVER: "America/New_York",
            GROUP_MEMBER: "Asia/Tokyo",
            BYSTANDER: "UTC",
        },
        usergroups={GROUP: [GROUP_MEMBER]},
        token=BOT_TOKEN,
        set_status_error="not_allowed_token_type",
        private_channels=frozenset({PRIVATE_CHANNEL}),
    )
    async with server:
        yield server
    # Every message and view the bot sent is one Slack would take (slack_sdk's block
    # models and Slack's documented limits; see tests/fakes/slack_server.py).
    assert server.invalid == []


@pytest.fixture
async def model() -> AsyncIterator[FakeModelServer]:
    async with FakeModelServer(api_key="test-key") as server:
        yield server


def signed_headers(body: str, *, secret: str = SIGNING_SECRET, at: int | None = None) -> dict:
    timestamp = str(int(time.time()) if at is None else at)
    base = f"v0:{timestamp}:{body}".encode()
    signature = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": signature}


def action_elements(message: Message) -> list[dict[str, Any]]:
    """The buttons and menus of `message`, in order."""
    return [
        element
        for block in message.blocks
        if block.get("type") == "actions"
        for element in block["elements"]
    ]


def element_of(message: Message, action_id: str) -> tuple[str, dict[str, Any]]:
    """(block id, element) of the button or menu `action_id` in `message`."""
    return next(
        (block.get("block_id", ""), element)
        for block in message.blocks
        if block.get("type") == "actions"
        for element in block["elements"]
        if element["action_id"] == action_id
    )


def plain_text(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text, "emoji": True}


@dataclass
class Sent:
    status: int
    text: str


class Deliveries:
    """Counts the requests Bolt hands to listeners and the listeners that finished, so a
    test can wait for "handled and nothing happened" instead of sleeping.

    A request reaches the middleware before Bolt acknowledges it, so by the time the HTTP
    response arrives it is counted; Bolt's listener-completion hook counts it done (Bolt
    runs listeners after the acknowledgement, in a task of its own)."""

    def __init__(self, app: AsyncApp) -> None:
        self.entered = 0
        self.finished = 0
        self._changed = asyncio.Condition()

        async def count(next: Any) -> Any:
            self.entered += 1
            response = await next()
            if response is not None and response.status == 404:  # no listener matched
                await self._finish()
            return response

        deliveries = self

        class Completion(AsyncListenerCompletionHandler):
            async def handle(self, request: Any, response: Any) -> None:
                await deliveries._finish()

        app.middleware(count)
        # Bolt takes this hook as a constructor argument of its listener runner only.
        app._async_listener_runner.listener_completion_handler = Completion()

    async def _finish(self) -> None:
        async with self._changed:
            self.finished += 1
            self._changed.notify_all()

    async def settled(self, within_s: float = 10.0) -> None:
        async def caught_up() -> None:
            async with self._changed:
                await self._changed.wait_for(lambda: self.finished >= self.entered)

        await asyncio.wait_for(caught_up(), within_s)


class SlackHarness:
    """One running bot (Bolt app + agent + state) behind an HTTP port."""

    _ts = itertools.count(1)
    _event_ids = itertools.count(1)
    _triggers = itertools.count(1)

    def __init__(
        self,
        slack: FakeSlack,
        model: FakeModelServer,
        shop_url: str,
        state_dir: Path,
        *,
        redis: tuple[str, str] | None = None,  # (DBAGENT_STATE_URL, key prefix): shared state
    ) -> None:
        self.redis = redis
        self.slack = slack
        self.model = model
        self.shop_url = shop_url
        self.state_dir = state_dir
        self.settings = Settings(
            slack_bot_token=BOT_TOKEN,
            slack_signing_secret=SIGNING_SECRET,
            slack_api_url=slack.api_url,
            openai_base_url=model.url,
            openai_api_key="test-key",
            openai_model="fake-model",
            databases=[
                DatabaseConfig(name=STAGING, url=shop_url, environment="staging"),
                DatabaseConfig(name=PRODUCTION, url=shop_url, environment="production"),
            ],
            approvals={"approvers": [APPROVER, GROUP], "audit_channel": AUDIT_CHANNEL},
            channels={"C0ASKONLY": "ask"},
            limits=Limits(model_max_retries=0, statement_timeout_s=10, max_message_chars=500),
        )
        # Web API calls: a short timeout so a hung call is given up on quickly, and short
        # backoffs.
        self.api_timeout_s = 5.0
        self.backoff_s = 0.05
        self.state: State | None = None
        self.registry: DatabaseRegistry | None = None
        self.session: aiohttp.ClientSession | None = None
        self.app: AsyncApp | None = None
        self.agent: Agent | None = None
        self.model_client: ModelClient | None = None
        self.parts: Parts | None = None
        self._runner: web.AppRunner | None = None
        self._forwarded_stops: asyncio.Task[None] | None = None
        self.url = ""

    async def start(self) -> SlackHarness:
        url, prefix = self.redis or (None, "unused:")
        state = await open_state(
            self.settings.model_copy(
                update={"dbagent_state_dir": self.state_dir, "dbagent_state_url": url}
            ),
            redis_prefix=prefix,
        )
        self.parts = await build_parts(self.settings, state=state)
        self.state, self.registry = self.parts.state, self.parts.databases
        self.model_client, self.agent = self.parts.model, self.parts.agent
        self.session = api_session(self.api_timeout_s)
        client = make_client(
            self.settings,
            session=self.session,
            timeout_s=self.api_timeout_s,
            backoff_s=self.backoff_s,
        )
        self.app = build_app(self.settings, self.agent, self.state, client)
        self._deliveries = Deliveries(self.app)
        # As serve() does: threads hear of changes the last process stopped while they ran.
        await tell_interrupted(services_of_app(self.app), self.parts.interrupted)
        take_up(services_of_app(self.app), self.parts.interrupted)
        self._forwarded_stops = asyncio.create_task(
            listen_for_forwarded_stops(services_of_app(self.app))
        )
        self._runner, port = await serve_locally(build_web_app(self.app))
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def stop(self) -> None:
        if self.app is not None:
            await services_of_app(self.app).queues.drain()
        if self._forwarded_stops is not None:
            self._forwarded_stops.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._forwarded_stops
            self._forwarded_stops = None
        if self._runner is not None:
            await self._runner.cleanup()
        if self.session is not None:
            await self.session.close()
        if self.parts is not None:
            await self.parts.close()
        self.app = self._runner = self.session = self.registry = self.state = None
        self.parts = None

    async def idle(self) -> None:
        """Wait until every queued run has finished."""
        assert self.app is not None
        await services_of_app(self.app).queues.drain()

    async def settled(self) -> None:
        """Wait until every delivery sent so far has been handled by its listener (or
        dropped before one), then until every run it queued has finished."""
        await self._deliveries.settled()
        await self.idle()

    # -- sending ------------------------------------------------------------------------
    @classmethod
    def new_ts(cls) -> str:
        return f"{1_800_000_000 + next(cls._ts)}.000200"

    async def post(self, body: str, content_type: str, headers: dict | None = None) -> Sent:
        headers = {"Content-Type": content_type, **(headers or signed_headers(body))}
        async with (
            aiohttp.ClientSession() as http,
            http.post(self.url + EVENTS_PATH, data=body.encode(), headers=headers) as response,
        ):
            return Sent(response.status, await response.text())

    async def send_event(
        self, event: dict[str, Any], *, event_id: str | None = None, retry: int = 0
    ) -> Sent:
        envelope = {
            "token": "legacy-token",
            "team_id": TEAM_ID,
            "api_app_id": "A0DBAGENT",
            "event": event,
            "type": "event_callback",
            "event_id": event_id or f"Ev{next(self._event_ids):010d}",
            "event_time": int(time.time()),
            "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
        }
        body = json.dumps(envelope)
        headers = signed_headers(body)
        if retry:
            headers.update({"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "timeout"})
        return await self.post(body, "application/json", headers)

    async def mention(
        self,
        text: str,
        *,
        ts: str | None = None,
        thread_ts: str | None = None,
        channel: str = CHANNEL,
        user: str = ASKER,
        event_id: str | None = None,
    ) -> tuple[str, Sent]:
        """`@dbagent text` in a channel; returns (the thread's ts, the response)."""
        ts = ts or self.new_ts()
        event = {
            "type": "app_mention",
            "user": user,
            "text": f"<@{BOT_USER_ID}> {text}",
            "ts": ts,
            "channel": channel,
            "event_ts": ts,
        }
        if thread_ts:
            event["thread_ts"] = thread_ts
        return thread_ts or ts, await self.send_event(event, event_id=event_id)

    async def message(
        self,
        text: str,
        *,
        channel: str = CHANNEL,
        channel_type: str = "channel",
        ts: str | None = None,
        thread_ts: str | None = None,
        user: str = ASKER,
        **extra: Any,
    ) -> tuple[str, Sent]:
        ts = ts or self.new_ts()
        event: dict[str, Any] = {
            "type": "message",
            "channel": channel,
            "channel_type": channel_type,
            "user": user,
            "text": text,
            "ts": ts,
            "event_ts": ts,
            **extra,
        }
        if thread_ts:
            event["thread_ts"] = thread_ts
        return thread_ts or ts, await self.send_event(event)

    async def dm(self, text: str, **kwargs: Any) -> tuple[str, Sent]:
        return await self.message(text, channel=DM, channel_type="im", **kwargs)

    async def click(self, action_id: str, card: Message, *, user: str) -> Sent:
        """Click a button of `card` (an approval card the fake Slack holds)."""
        return await self.press(card, action_id, user=user)

    async def click_value(self, action_id: str, value: str, card: Message, *, user: str) -> Sent:
        """Click a button of `card` whose value was changed to `value`."""
        block_id = element_of(card, action_id)[0]
        payload = self.action_payload(card, action_id, block_id, {"value": value}, user=user)
        return await self.interact(payload)

    async def press(
        self, message: Message, action_id: str, *, user: str, state: dict | None = None
    ) -> Sent:
        """Click the button `action_id` of `message`; `state`: the message's menus as the
        clicker left them ({block_id: {action_id: selected value}})."""
        block_id, button = element_of(message, action_id)
        payload = self.action_payload(
            message, action_id, block_id, {"value": button["value"]}, user=user, state=state
        )
        return await self.interact(payload)

    async def pick(self, message: Message, action_id: str, value: str, *, user: str) -> Sent:
        """Choose the option with `value` in the menu `action_id` of `message`."""
        block_id, menu = element_of(message, action_id)
        option = next(o for o in menu["options"] if o["value"] == value)
        payload = self.action_payload(
            message,
            action_id,
            block_id,
            {"type": "static_select", "selected_option": option},
            user=user,
            state={block_id: {action_id: value}},
        )
        return await self.interact(payload)

    def action_payload(
        self,
        message: Message,
        action_id: str,
        block_id: str,
        action: dict[str, Any],
        *,
        user: str,
        state: dict | None = None,
    ) -> dict[str, Any]:
        """A block_actions payload as Slack sends it for a click in `message`."""
        values = {
            block: {
                menu: {"type": "static_select", "selected_option": {"value": chosen}}
                for menu, chosen in menus.items()
            }
            for block, menus in (state or {}).items()
        }
        return {
            "type": "block_actions",
            "user": {"id": user, "username": user.lower(), "team_id": TEAM_ID},
            "api_app_id": "A0DBAGENT",
            "token": "legacy-token",
            "container": {
                "type": "message",
                "message_ts": message.ts,
                "channel_id": message.channel,
                "is_ephemeral": False,
                "thread_ts": message.thread_ts,
            },
            "trigger_id": f"{next(self._triggers)}.{int(time.time())}.fake",
            "team": {"id": TEAM_ID, "domain": "fake"},
            "channel": {"id": message.channel, "name": "shop"},
            "message": {
                "type": "message",
                "ts": message.ts,
                "thread_ts": message.thread_ts,
                "text": message.text,
                "blocks": message.blocks,
            },
            "state": {"values": values},
            "actions": [
                {
                    "type": "button",
                    "action_id": action_id,
                    "block_id": block_id,
                    "action_ts": f"{time.time():.6f}",
                    **action,
                }
            ],
        }

    def view_submission(
        self, view: OpenedView, *, user: str, sql: str | None, database: str | None
    ) -> dict[str, Any]:
        """The payload of submitting the Edit & run modal with these values."""
        modal = view.view
        selected = None if database is None else {"text": plain_text(database), "value": database}
        return {
            "type": "view_submission",
            "team": {"id": TEAM_ID, "domain": "fake"},
            "user": {"id": user, "username": user.lower(), "team_id": TEAM_ID},
            "api_app_id": "A0DBAGENT",
            "token": "legacy-token",
            "trigger_id": f"{next(self._triggers)}.{int(time.time())}.fake",
            "view": {
                "id": view.id,
                "type": "modal",
                "callback_id": modal["callback_id"],
                "private_metadata": modal.get("private_metadata", ""),
                "hash": view.hash,
                "blocks": modal["blocks"],
                "state": {
                    "values": {
                        "sql": {"sql": {"type": "plain_text_input", "value": sql}},
                        "database": {
                            "database": {"type": "static_select", "selected_option": selected}
                        },
                    }
                },
            },
        }

    @staticmethod
    def form(payload: dict[str, Any]) -> str:
        return urlencode({"payload": json.dumps(payload)})

    async def interact(self, payload: dict[str, Any], headers: dict | None = None) -> Sent:
        """Send an interactivity payload (signed, unless `headers` says otherwise)."""
        return await self.post(self.form(payload), "application/x-www-form-urlencoded", headers)

    # -- reading ------------------------------------------------------------------------
    def thread(self, thread_ts: str, channel: str = CHANNEL) -> list[Message]:
        return self.slack.thread(channel, thread_ts)

    def texts(self, thread_ts: str, channel: str = CHANNEL) -> list[str]:
        return [m.text for m in self.thread(thread_ts, channel)]

    def working_message(self, thread_ts: str, channel: str = CHANNEL) -> Message | None:
        """The thread's working message (the one with Stop), if it shows one now."""
        return next(
            (
                m
                for m in self.thread(thread_ts, channel)
                if any(b.get("block_id") == "working" for b in m.blocks)
            ),
            None,
        )

    def cards(self, thread_ts: str, channel: str = CHANNEL) -> list[Message]:
        return [
            m
            for m in self.thread(thread_ts, channel)
            if any(b.get("block_id") == "approval" for b in m.blocks)
            or m.text.startswith(("Approval needed", "Approved", "Denied"))
        ]

    async def wait_for_card(self, thread_ts: str, channel: str = CHANNEL) -> Message:
        """The thread's approval card as people saw it when posted (a snapshot: clicks
        replay it even after the bot has updated the card)."""
        cards = await self.slack.wait_for(lambda: self.cards(thread_ts, channel))
        await self.idle()
        return copy.deepcopy(cards[0])


@pytest.fixture
async def harness(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> AsyncIterator[SlackHarness]:
    bot = SlackHarness(slack, model, shop_url, tmp_path / "state")
    await bot.start()
    yield bot
    await bot.stop()
